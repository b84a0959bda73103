// Member, cluster and lease IDs: uint64/int64 held as bigint, written in hex as
// etcdctl writes them in text (lowercase, no padding) and read in hex or decimal
// (etcdctl's JSON), sent on the wire as decimal strings.
import { InputError } from '../common/errors.js';
import { idReadings, parseIdText, resolveIdText } from '../common/ids.js';

export const MAX_UINT64 = (1n << 64n) - 1n;
export const MAX_INT64 = (1n << 63n) - 1n;

const EXAMPLE_ID = '8e9e05c52164694d';

/**
 * Parse a member ID: hex as etcdctl reads and prints it in text ("0x" tolerated),
 * or the decimal uint64 etcdctl's and our `-w json` print. A 1–16 digit string of
 * 0–9 reads both ways; without a member list to tell (see `resolveMemberId`) it is
 * hex, as etcdctl takes it.
 */
export function parseMemberId(text: string): bigint {
  const id = parseIdText(text);
  if (id === undefined || id === 0n) throw badMemberId(text);
  return id;
}

/**
 * A member ID typed on the command line, resolved against the cluster's members
 * when it reads both ways (1–16 digits 0–9): the reading that names a member wins
 * (hex when both or neither do). The list is read only then.
 */
export async function resolveMemberId(text: string, client: { memberList(): Promise<{ members: Array<{ id: bigint }> }> }): Promise<bigint> {
  const r = idReadings(text);
  if (r.hex === undefined || r.decimal === undefined) return parseMemberId(text);
  const { members } = await client.memberList();
  const id = resolveIdText(
    text,
    members.map((m) => m.id),
  );
  if (id === undefined || id === 0n) throw badMemberId(text);
  return id;
}

function badMemberId(text: string): InputError {
  return new InputError(`invalid member ID "${text}": expected hex, e.g. ${EXAMPLE_ID}, or the decimal ID -w json prints`);
}

/** Parse a lease ID: hex as `etcdctl lease grant` prints it, or decimal (more than 16 digits) as JSON prints it; int64, non-negative. */
export function parseLeaseId(text: string): bigint {
  const id = parseIdText(text);
  if (id === undefined || id > MAX_INT64) {
    throw new InputError(`invalid lease ID "${text}": expected hex, e.g. 694d71ddacfda227, or the decimal ID -w json prints`);
  }
  return id;
}

/** Lowercase hex without padding (`%x`); padded to 16 digits (`%016x`), for tables. */
export { formatId as hexId, formatIdPadded as paddedHexId } from '../common/ids.js';

/** A wire uint64/int64 (decimal string with longs: String) → bigint. */
export function wireBig(v: unknown): bigint {
  if (v === undefined || v === null || v === '') return 0n;
  return BigInt(v as string | number);
}

/** A wire int64 that fits a JS number (revisions, terms, indexes, sizes). */
export function wireNum(v: unknown): number {
  if (v === undefined || v === null || v === '') return 0;
  return Number(v);
}
