// Values of the nine parameter types: converting what YAML, --set or a prompt
// gave into what a step receives (see stepTypes.ts), and printing them back.
import { homedir } from 'node:os';
import path from 'node:path';
import { formatDuration, parseDuration } from '../common/durations.js';
import { MEMBER_KEYS } from './schema.js';
import type { MemberSpec, ParamType } from './stepTypes.js';

export type Converted = { ok: true; value: unknown } | { ok: false; error: string };

const ok = (value: unknown): Converted => ({ ok: true, value });
const fail = (error: string): Converted => ({ ok: false, error });

/** What `raw` is, for messages: `"abc"`, `12`, `a list`, `a map`. */
export function describeRaw(raw: unknown): string {
  if (Array.isArray(raw)) return 'a list';
  if (raw === null || raw === undefined) return 'nothing';
  if (typeof raw === 'object') return 'a map';
  return JSON.stringify(raw);
}

const URL_PATTERN = /^https?:\/\/(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?):(\d{1,5})\/?$/;

/** Whether `text` is an http(s)://host:port URL (the port written out, nothing after it). */
export function urlProblem(text: string): string | undefined {
  const m = URL_PATTERN.exec(text);
  const port = m ? Number(m[2]) : 0;
  if (!m || port < 1 || port > 65535) return `${JSON.stringify(text)} is not an http(s)://host:port URL (e.g. http://10.0.0.1:2380)`;
  try {
    new URL(text);
  } catch {
    return `${JSON.stringify(text)} is not a valid URL`;
  }
  return undefined;
}

/** Member names as they may appear in `name=peerURL,clientURL`: no separators or spaces. */
const MEMBER_NAME = /^[^\s=,;]+$/;

function convertMember(raw: unknown): Converted {
  let spec: Record<string, unknown>;
  if (typeof raw === 'string') {
    const m = /^([^=]*)=(.*)$/.exec(raw.trim());
    if (!m) return fail(`${JSON.stringify(raw)} is not a member: write name=peerURL,clientURL[,dataDir]`);
    const parts = m[2].split(',').map((s) => s.trim());
    if (parts.length < 2 || parts.length > 3) return fail(`${JSON.stringify(raw)} is not a member: write name=peerURL,clientURL[,dataDir]`);
    spec = { name: m[1].trim(), peerUrl: parts[0], clientUrl: parts[1], ...(parts[2] !== undefined ? { dataDir: parts[2] } : {}) };
  } else if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
    spec = raw as Record<string, unknown>;
    const unknown = Object.keys(spec).filter((k) => !(MEMBER_KEYS as readonly string[]).includes(k));
    if (unknown.length > 0) return fail(`a member has no field ${unknown.map((k) => JSON.stringify(k)).join(', ')} (fields: ${MEMBER_KEYS.join(', ')})`);
  } else {
    return fail(`expected a member (name=peerURL,clientURL or a map with ${MEMBER_KEYS.join(', ')}), got ${describeRaw(raw)}`);
  }
  const name = spec.name;
  if (typeof name !== 'string' || !MEMBER_NAME.test(name)) return fail(`a member needs a name without spaces, '=', ',' or ';', got ${describeRaw(name)}`);
  const out: MemberSpec = { name, peerUrl: '', clientUrl: '' };
  for (const key of ['peerUrl', 'clientUrl'] as const) {
    const v = spec[key];
    if (typeof v !== 'string') return fail(`member ${name}: ${key} must be an http(s)://host:port URL, got ${describeRaw(v)}`);
    const bad = urlProblem(v);
    if (bad) return fail(`member ${name}: ${key} ${bad}`);
    out[key] = v.replace(/\/$/, '');
  }
  if (spec.dataDir !== undefined) {
    const dir = convertPath(spec.dataDir);
    if (!dir.ok) return fail(`member ${name}: dataDir: ${dir.error}`);
    out.dataDir = dir.value as string;
  }
  return ok(out);
}

function convertPath(raw: unknown): Converted {
  if (typeof raw !== 'string' || raw.trim() === '') return fail(`expected a path, got ${describeRaw(raw)}`);
  const p = raw.trim();
  // A store URL (a backup point, file:///dir@POINT or s3://bucket/prefix@POINT) is no path on this host.
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(p)) return ok(p);
  return ok(path.resolve(p === '~' ? homedir() : p.startsWith('~/') ? path.join(homedir(), p.slice(2)) : p));
}

/**
 * Converts `raw` to `type` (lists: each item to `items`, default string). Text is
 * accepted for every type (it is what --set and prompts give); paths become
 * absolute, durations milliseconds, URLs lose a trailing slash.
 */
export function convertValue(raw: unknown, type: ParamType, items: ParamType = 'string'): Converted {
  switch (type) {
    case 'string':
      if (typeof raw === 'string') return ok(raw);
      if (typeof raw === 'number' || typeof raw === 'boolean') return ok(String(raw));
      return fail(`expected text, got ${describeRaw(raw)}`);
    case 'secret':
      // Text like a string; a message never shows the value (describeRaw only for what is no text).
      if (typeof raw === 'string') return ok(raw);
      if (typeof raw === 'number' || typeof raw === 'boolean') return ok(String(raw));
      return fail(`expected text, got ${Array.isArray(raw) ? 'a list' : raw === null || raw === undefined ? 'nothing' : 'a map'}`);
    case 'int': {
      if (typeof raw === 'number' && Number.isSafeInteger(raw)) return ok(raw);
      if (typeof raw === 'string' && /^\s*[-+]?\d+\s*$/.test(raw) && Number.isSafeInteger(Number(raw))) return ok(Number(raw));
      return fail(`expected an integer, got ${describeRaw(raw)}`);
    }
    case 'url': {
      if (typeof raw !== 'string') return fail(`expected an http(s)://host:port URL, got ${describeRaw(raw)}`);
      const bad = urlProblem(raw.trim());
      return bad ? fail(bad) : ok(raw.trim().replace(/\/$/, ''));
    }
    case 'path':
      return convertPath(raw);
    case 'bool': {
      if (typeof raw === 'boolean') return ok(raw);
      if (typeof raw === 'string') {
        const t = raw.trim().toLowerCase();
        if (['true', 'yes', 'on', 'y'].includes(t)) return ok(true);
        if (['false', 'no', 'off', 'n'].includes(t)) return ok(false);
      }
      return fail(`expected true or false, got ${describeRaw(raw)}`);
    }
    case 'duration': {
      if (typeof raw === 'number') return raw > 0 && Number.isFinite(raw) ? ok(Math.ceil(raw)) : fail(`a duration must be greater than zero, got ${raw}`);
      if (typeof raw !== 'string') return fail(`expected a duration such as 5s or 500ms, got ${describeRaw(raw)}`);
      try {
        return ok(parseDuration(raw, 'duration'));
      } catch (err) {
        return fail((err as Error).message);
      }
    }
    case 'member':
      return convertMember(raw);
    case 'list': {
      let list: unknown[];
      if (Array.isArray(raw)) list = raw;
      else if (typeof raw === 'string') {
        // Members contain commas, so a list of members is separated by ';'.
        list = raw
          .split(items === 'member' ? ';' : ',')
          .map((s) => s.trim())
          .filter((s) => s !== '');
      } else return fail(`expected a list, got ${describeRaw(raw)}`);
      const out: unknown[] = [];
      for (const [i, item] of list.entries()) {
        if (items === 'list') return fail('lists of lists are not supported');
        const c = convertValue(item, items);
        if (!c.ok) return fail(`item ${i + 1}: ${c.error}`);
        out.push(c.value);
      }
      return ok(out);
    }
  }
}

/** A value as an operator reads it (and as --set would take it back). */
export function formatValue(value: unknown, type?: ParamType, items?: ParamType): string {
  if (value === undefined) return '(unset)';
  if (type === 'duration' && typeof value === 'number') return formatDuration(value);
  if (Array.isArray(value) && value.length === 0) return '(none)';
  if (Array.isArray(value)) return value.map((v) => formatValue(v, type === 'list' ? items : undefined)).join(items === 'member' ? '; ' : ', ');
  if (isMemberSpec(value)) return `${value.name}=${value.peerUrl},${value.clientUrl}${value.dataDir ? `,${value.dataDir}` : ''}`;
  if (value !== null && typeof value === 'object') return JSON.stringify(value);
  // objects were handled above: what is left is a primitive (values come from YAML, --set or a prompt)
  const primitive = value as string | number | boolean | bigint | symbol | null;
  return String(primitive);
}

export function isMemberSpec(v: unknown): v is MemberSpec {
  return (
    v !== null && typeof v === 'object' && !Array.isArray(v) && typeof (v as MemberSpec).name === 'string' && typeof (v as MemberSpec).peerUrl === 'string'
  );
}
