// References in playbook strings, and nothing more: `${vars.name}`,
// `${item.field}` (the for-each item, under its `as` name) and
// `${steps.<id>.<output>}`. A dotted path, no operators, no eval. `$${` writes a
// literal `${`. A string that is exactly one reference takes the referenced
// value with its type (a list, a member, a number); a reference inside other text
// must be text, a number or a boolean.

export interface Ref {
  /** as written, e.g. `${vars.members}` */
  text: string;
  /** `vars`, `steps`, or a for-each item name */
  root: string;
  /** the rest of the dotted path */
  path: string[];
}

export type TemplatePart = string | Ref;

export interface Template {
  parts: TemplatePart[];
  /** the string is exactly one reference */
  whole: boolean;
}

const SEGMENT = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** Parses `${…}` references out of `text`; a malformed one is an error message. */
export function parseTemplate(text: string): Template | { error: string } {
  const parts: TemplatePart[] = [];
  let literal = '';
  let i = 0;
  while (i < text.length) {
    if (text.startsWith('$${', i)) {
      literal += '${';
      i += 3;
      continue;
    }
    if (text.startsWith('${', i)) {
      const end = text.indexOf('}', i + 2);
      if (end < 0) return { error: `unclosed reference in ${JSON.stringify(text)} (write $\${ for a literal \${)` };
      const inner = text.slice(i + 2, end).trim();
      const segs = inner.split('.');
      if (inner === '' || !segs.every((s) => SEGMENT.test(s))) {
        return {
          error: `${JSON.stringify(text.slice(i, end + 1))} is not a reference: write \${vars.NAME}, \${ITEM.FIELD} or \${steps.ID.OUTPUT} (a dotted path, nothing else)`,
        };
      }
      if (literal !== '') parts.push(literal);
      literal = '';
      parts.push({ text: text.slice(i, end + 1), root: segs[0], path: segs.slice(1) });
      i = end + 1;
      continue;
    }
    literal += text[i];
    i++;
  }
  if (literal !== '') parts.push(literal);
  return { parts, whole: parts.length === 1 && typeof parts[0] !== 'string' };
}

/** Every reference in a YAML value (strings at any depth); malformed ones reported through `onError`. */
export function referencesIn(value: unknown, onError: (message: string) => void): Ref[] {
  const out: Ref[] = [];
  walkStrings(value, (s) => {
    const t = parseTemplate(s);
    if ('error' in t) onError(t.error);
    else for (const p of t.parts) if (typeof p !== 'string') out.push(p);
  });
  return out;
}

function walkStrings(value: unknown, fn: (s: string) => void): void {
  if (typeof value === 'string') fn(value);
  else if (Array.isArray(value)) value.forEach((v) => walkStrings(v, fn));
  else if (value !== null && typeof value === 'object') Object.values(value).forEach((v) => walkStrings(v, fn));
}

export type Lookup = { found: true; value: unknown } | { found: false; error: string };

/** Resolves one reference to its value. */
export type RefResolver = (ref: Ref) => Lookup;

/** Thrown when a reference cannot be resolved at run time. */
export class UnresolvedReferenceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnresolvedReferenceError';
  }
}

/** Follows `path` into `value` (map fields only). */
export function follow(value: unknown, path: string[], where: string): Lookup {
  let v = value;
  let at = where;
  for (const seg of path) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) {
      return { found: false, error: `${at} is ${Array.isArray(v) ? 'a list' : JSON.stringify(v)}, it has no field ${seg}` };
    }
    if (!Object.prototype.hasOwnProperty.call(v, seg)) {
      // A member's optional dataDir left out: unset, so the parameter takes its default.
      if (seg === 'dataDir' && typeof (v as { peerUrl?: unknown }).peerUrl === 'string') return { found: true, value: undefined };
      const fields = Object.keys(v);
      return { found: false, error: `${at} has no field ${seg}${fields.length > 0 ? ` (it has: ${fields.join(', ')})` : ''}` };
    }
    v = (v as Record<string, unknown>)[seg];
    at = `${at}.${seg}`;
  }
  return { found: true, value: v };
}

/** Replaces every reference in `value` (at any depth) through `resolve`; throws UnresolvedReferenceError. */
export function interpolate(value: unknown, resolve: RefResolver): unknown {
  if (typeof value === 'string') return interpolateString(value, resolve);
  if (Array.isArray(value)) return value.map((v) => interpolate(v, resolve));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, resolve)]));
  }
  return value;
}

function interpolateString(text: string, resolve: RefResolver): unknown {
  const t = parseTemplate(text);
  if ('error' in t) throw new UnresolvedReferenceError(t.error);
  if (t.whole) {
    const r = resolve(t.parts[0] as Ref);
    if (!r.found) throw new UnresolvedReferenceError(r.error);
    return r.value;
  }
  let out = '';
  for (const p of t.parts) {
    if (typeof p === 'string') {
      out += p;
      continue;
    }
    const r = resolve(p);
    if (!r.found) throw new UnresolvedReferenceError(r.error);
    if (typeof r.value === 'string' || typeof r.value === 'number' || typeof r.value === 'boolean') out += String(r.value);
    else {
      throw new UnresolvedReferenceError(
        `${p.text} is ${Array.isArray(r.value) ? 'a list' : r.value === null || r.value === undefined ? 'empty' : 'a map'}; only text, numbers and booleans can be part of a longer string`,
      );
    }
  }
  return out;
}
