// How the survivor served TLS, found in its own settings, so the members a
// recovery starts serve it the same way — each with its own certificate. Looked
// for, in order: the env file next to its data dir (DIR.env, Lifeboat's hand-off,
// LIFEBOAT_* or ETCD_*), the etcd env files of the distributions
// (/etc/default/etcd, /etc/etcd/etcd.conf, /etc/sysconfig/etcd) and systemd units
// (their ExecStart flags, Environment= and EnvironmentFile=) — an env file or unit
// counts only when the data dir it names is the survivor's. Paths holding the
// survivor's name become `{name}` patterns: /etc/etcd/pki/m1/server.crt is
// /etc/etcd/pki/{name}/server.crt, each member's own.
import fs from 'node:fs';
import path from 'node:path';
import { NAME_PLACEHOLDER } from '../ops/memberTls.js';
import { envFileOf } from '../ops/supervisor.js';

/** The playbooks' TLS variables (etcd's flag names). */
export const TLS_VARIABLES = [
  'cert-file',
  'key-file',
  'trusted-ca-file',
  'client-cert-auth',
  'peer-cert-file',
  'peer-key-file',
  'peer-trusted-ca-file',
  'peer-client-cert-auth',
] as const;

const FILE_VARIABLES = new Set(['cert-file', 'key-file', 'trusted-ca-file', 'peer-cert-file', 'peer-key-file', 'peer-trusted-ca-file']);
const BOOL_FLAGS = new Set(['client-cert-auth', 'peer-client-cert-auth']);

export interface DetectedTls {
  /** the file the settings were read from */
  from: string;
  /** the TLS variables as found */
  found: Record<string, string>;
  /** the TLS variables for every member: the survivor's name in a path as {name} */
  sets: Record<string, string>;
}

/** Where the distributions keep etcd's settings, and systemd its units (under `root`). */
const ENV_FILES = ['etc/default/etcd', 'etc/etcd/etcd.conf', 'etc/sysconfig/etcd'];
const UNIT_DIRS = ['etc/systemd/system', 'lib/systemd/system', 'usr/lib/systemd/system'];

/** Where the host's /etc is, when not / (the survivor host's root disk mounted elsewhere). */
export const HOST_ROOT_ENV = 'LIFEBOAT_HOST_ROOT';

/** The places looked in, as an operator reads them. */
export function tlsSearchText(dataDir: string, root = '/'): string {
  return `${envFileOf(dataDir)}, ${ENV_FILES.map((f) => path.join(root, f)).join(', ')} and the systemd units under ${UNIT_DIRS.map((d) => path.join(root, d)).join(', ')}`;
}

/** The survivor's TLS settings, if a file of its own says them; `name` is the survivor's member name. */
export function detectSurvivorTls(dataDir: string, name: string | undefined, root = '/'): DetectedTls | undefined {
  const mine = path.resolve(dataDir);
  const isMine = (settings: Map<string, string>) => {
    const d = settings.get('data-dir');
    return d !== undefined && path.resolve(d) === mine;
  };
  const candidates: Array<[string, () => Map<string, string> | undefined]> = [];
  const beside = envFileOf(dataDir);
  candidates.push([beside, () => envSettings(beside)]);
  for (const f of ENV_FILES) {
    const file = path.join(root, f);
    candidates.push([file, () => envSettings(file)]);
  }
  for (const d of UNIT_DIRS) {
    const dir = path.join(root, d);
    for (const unit of listUnits(dir)) candidates.push([unit, () => unitSettings(unit, root)]);
  }
  for (const [from, read] of candidates) {
    const s = read();
    if (!s || (from === beside ? s.has('data-dir') && !isMine(s) : !isMine(s))) continue;
    const found: Record<string, string> = {};
    for (const v of TLS_VARIABLES) if (s.get(v)) found[v] = s.get(v)!;
    if (Object.keys(found).length === 0) continue;
    const sets: Record<string, string> = {};
    for (const [k, v] of Object.entries(found)) sets[k] = FILE_VARIABLES.has(k) && name ? namePattern(v, name) : v;
    return { from, found, sets };
  }
  return undefined;
}

/** `/etc/etcd/pki/m1/server.crt` for m1 → `/etc/etcd/pki/{name}/server.crt`: the name where it stands as a word of the path. */
function namePattern(file: string, name: string): string {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return file.replace(new RegExp(`(?<![A-Za-z0-9])${escaped}(?![A-Za-z0-9])`, 'g'), NAME_PLACEHOLDER);
}

function readText(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** ETCD_CERT_FILE / LIFEBOAT_CERT_FILE → cert-file. */
function settingName(key: string): string | undefined {
  const m = /^(?:ETCD|LIFEBOAT)_([A-Z0-9_]+)$/.exec(key);
  return m ? m[1].toLowerCase().replace(/_/g, '-') : undefined;
}

function unquote(v: string): string {
  const t = v.trim();
  return /^(["']).*\1$/.test(t) ? t.slice(1, -1).replace(/\\(["\\$`])/g, '$1') : t;
}

/** An env file's ETCD_* / LIFEBOAT_* settings. */
function envSettings(file: string): Map<string, string> | undefined {
  const text = readText(file);
  if (text === undefined) return undefined;
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^\s*(?:export\s+)?([A-Z0-9_]+)=(.*)$/.exec(line);
    const k = m && settingName(m[1]);
    if (m && k) out.set(k, unquote(m[2]));
  }
  return out;
}

function listUnits(dir: string): string[] {
  try {
    return fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.service'))
      .sort()
      .map((f) => path.join(dir, f));
  } catch {
    return [];
  }
}

/** A unit's settings: its EnvironmentFile= and Environment= values, then its ExecStart flags (which win, as for etcd). */
function unitSettings(file: string, root: string): Map<string, string> | undefined {
  const text = readText(file);
  if (text === undefined || !/etcd|lifeboat/i.test(text)) return undefined;
  const out = new Map<string, string>();
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  for (const line of lines) {
    const envFile = /^\s*EnvironmentFile=-?(.+)$/.exec(line);
    if (envFile) for (const [k, v] of envSettings(path.join(root, envFile[1].trim())) ?? []) out.set(k, v);
    const env = /^\s*Environment=(.+)$/.exec(line);
    if (env) {
      for (const word of words(env[1])) {
        const eq = word.indexOf('=');
        const k = eq > 0 ? settingName(word.slice(0, eq)) : undefined;
        if (k) out.set(k, word.slice(eq + 1));
      }
    }
  }
  for (const line of lines) {
    const exec = /^\s*ExecStart=[-@+!]*(.+)$/.exec(line);
    if (!exec) continue;
    const w = words(exec[1]);
    for (let i = 0; i < w.length; i++) {
      const flag = /^--?([a-z0-9-]+)(?:=(.*))?$/.exec(w[i]);
      if (!flag) continue;
      if (flag[2] !== undefined) out.set(flag[1], flag[2]);
      else if (BOOL_FLAGS.has(flag[1])) out.set(flag[1], 'true');
      else if (i + 1 < w.length && !w[i + 1].startsWith('-')) out.set(flag[1], w[++i]);
    }
  }
  return out;
}

/** Words as systemd splits a command line: by white space, "double" and 'single' quotes kept together. */
function words(s: string): string[] {
  return [...s.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]);
}
