// Member, cluster and lease IDs in text: the one formatting and parsing of uint64
// IDs held as bigint. They print as etcd prints them (`%x`: lowercase hex, no
// padding), or padded to 16 digits (`%016x`) where text order must be numeric
// order or columns must line up.

/** Lowercase hex without padding (etcd's `%x`). */
export function formatId(id: bigint): string {
  return id.toString(16);
}

/** Lowercase hex padded to 16 digits (`%016x`). */
export function formatIdPadded(id: bigint): string {
  return id.toString(16).padStart(16, '0');
}

/** Hex digits as written by formatId/formatIdPadded (no "0x") → the ID. */
export function parseId(hexDigits: string): bigint {
  return BigInt(`0x${hexDigits}`);
}

/** Parses a hex ID as an operator types it ("0x" tolerated); undefined when malformed. */
export function parseHexId(s: string): bigint | undefined {
  const t = s.trim().toLowerCase().replace(/^0x/, '');
  if (!/^[0-9a-f]{1,16}$/.test(t)) return undefined;
  return parseId(t);
}

/**
 * The readings of an ID as an operator types it: etcd writes IDs in hex in its
 * text output and as decimal uint64 numbers in its JSON, and scripts pass either.
 *
 * - "0x…" or any of a–f: hex only (at most 16 digits);
 * - more than 16 digits: decimal only (no uint64 has 17 hex digits);
 * - 1 to 16 digits, all 0–9: both, as hex and as decimal (ambiguous: a caller with
 *   a member list picks the reading that names a member, see `resolveIdText`;
 *   one without takes hex, as etcdctl does).
 * Empty when the text is neither.
 */
export function idReadings(text: string): { hex?: bigint; decimal?: bigint } {
  const t = text.trim().toLowerCase();
  if (t.startsWith('0x')) {
    const h = parseHexId(t);
    return h === undefined ? {} : { hex: h };
  }
  const out: { hex?: bigint; decimal?: bigint } = {};
  if (/^[0-9a-f]{1,16}$/.test(t)) out.hex = parseId(t);
  if (/^[0-9]{1,20}$/.test(t) && BigInt(t) <= MAX_UINT64_ID) out.decimal = BigInt(t);
  if (out.hex !== undefined && out.decimal !== undefined && out.hex === out.decimal) delete out.decimal;
  return out;
}

const MAX_UINT64_ID = (1n << 64n) - 1n;

/** An ID typed without a member list to check it against: hex, or decimal when it has more than 16 digits. */
export function parseIdText(text: string): bigint | undefined {
  const r = idReadings(text);
  return r.hex ?? r.decimal;
}

/**
 * An ID typed where the IDs that exist are known (the member list): a reading
 * that names one of `known` wins; when both or neither do, hex (etcdctl's reading).
 */
export function resolveIdText(text: string, known: readonly bigint[]): bigint | undefined {
  const r = idReadings(text);
  if (r.hex !== undefined && r.decimal !== undefined && !known.includes(r.hex) && known.includes(r.decimal)) return r.decimal;
  return r.hex ?? r.decimal;
}
