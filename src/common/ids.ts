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
