// The audit log's hash chain: every row ever written is one link, and each link's
// hash covers the previous link's hash, so editing, deleting, inserting or
// reordering any row breaks every hash after it. A leaf module.
import { createHash } from 'node:crypto';

/** prev_hash of the first row, and the head of an empty chain. */
export const GENESIS_HASH = '0'.repeat(64);

/** One row of the `chain` table as the hash sees it. */
export interface ChainLink {
  seq: number;
  /** ISO-8601 UTC with milliseconds */
  at: string;
  kind: string;
  runId: string;
  /** the payload as stored: canonical JSON text */
  payload: string;
}

/**
 * `hash = sha256(prev_hash || canonical JSON of [seq, at, kind, run_id, payload])`,
 * hex. The payload text is parsed and re-canonicalized, so the hash covers what
 * the row means, and a payload that is not JSON cannot be hashed (it throws).
 */
export function linkHash(prevHash: string, link: ChainLink): string {
  const body = canonicalJson([link.seq, link.at, link.kind, link.runId, JSON.parse(link.payload)]);
  return createHash('sha256').update(prevHash).update(body).digest('hex');
}

/**
 * JSON with object keys sorted (by UTF-16 code unit, recursively) and no
 * whitespace: one text per value. Values go through JSON first, so `toJSON`
 * applies (Dates become ISO strings), `undefined` members disappear and
 * non-finite numbers become null; bigints become decimal strings (pass IDs as
 * hex text: the run's cluster and member ID fields take bigints and write hex).
 */
export function canonicalJson(value: unknown): string {
  const plain: unknown = JSON.parse(JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) ?? 'null');
  return stringifySorted(plain);
}

function stringifySorted(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(stringifySorted).join(',')}]`;
  const obj = v as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stringifySorted(obj[k])}`).join(',')}}`;
}

/** sha256 of bytes, hex: for the playbook file a run follows. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}
