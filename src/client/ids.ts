// Member, cluster and lease IDs: uint64/int64 held as bigint, written in hex as
// etcdctl writes them (lowercase, no padding), sent on the wire as decimal strings.
import { InputError } from '../common/errors.js';

export const MAX_UINT64 = (1n << 64n) - 1n;
export const MAX_INT64 = (1n << 63n) - 1n;

const EXAMPLE_ID = '8e9e05c52164694d';

/** Parse a member ID as etcdctl does (hex, at most 16 digits); "0x" is tolerated. */
export function parseMemberId(text: string): bigint {
  const digits = text.trim().replace(/^0x/i, '');
  if (!/^[0-9a-fA-F]{1,16}$/.test(digits) || BigInt(`0x${digits}`) === 0n) {
    throw new InputError(`invalid member ID "${text}": expected hex, e.g. ${EXAMPLE_ID}`);
  }
  return BigInt(`0x${digits}`);
}

/** Parse a lease ID (hex, as `etcdctl lease grant` prints it; int64, non-negative). */
export function parseLeaseId(text: string): bigint {
  const digits = text.trim().replace(/^0x/i, '');
  if (!/^[0-9a-fA-F]{1,16}$/.test(digits) || BigInt(`0x${digits}`) > MAX_INT64) {
    throw new InputError(`invalid lease ID "${text}": expected hex, e.g. 694d71ddacfda227`);
  }
  return BigInt(`0x${digits}`);
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
