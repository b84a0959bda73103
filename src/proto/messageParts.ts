// Responses encoded by hand, in parts, where one field is a large byte string:
// the bytes before it, then the caller's own buffer. A server that writes the
// parts to the HTTP/2 stream one after the other (src/net/directCalls.ts) never
// copies a snapshot's 1 MiB chunk into a message buffer, nor that into a framed
// one, as protobufjs and grpc-js each do; at 100k keys those copies and the
// garbage they leave were a third of a member's work per `snapshot save`.
// Field numbers and wire types as in rpc.proto.

/** The message as parts whose concatenation is its protobuf encoding, or undefined to use the generic codec. */
export type PartsEncoder = (value: object) => Buffer[] | undefined;

const WIRE_VARINT = 0;
const WIRE_BYTES = 2;

function pushVarint(out: number[], n: bigint): void {
  while (n >= 0x80n) {
    out.push(Number(n & 0x7fn) | 0x80);
    n >>= 7n;
  }
  out.push(Number(n));
}

/** etcdserverpb.SnapshotResponse { header = 1; uint64 remaining_bytes = 2; bytes blob = 3 }, without a header (we send none). */
function snapshotResponse(value: object): Buffer[] | undefined {
  const v = value as { header?: unknown; remaining_bytes?: string | number; blob?: unknown };
  if (v.header != null || (v.blob != null && !Buffer.isBuffer(v.blob))) return undefined;
  const head: number[] = [];
  const remaining = BigInt(v.remaining_bytes ?? 0);
  if (remaining !== 0n) {
    head.push((2 << 3) | WIRE_VARINT);
    pushVarint(head, remaining);
  }
  const blob = (v.blob as Buffer | undefined) ?? Buffer.alloc(0);
  if (blob.length === 0) return [Buffer.from(head)];
  head.push((3 << 3) | WIRE_BYTES);
  pushVarint(head, BigInt(blob.length));
  return [Buffer.from(head), blob];
}

/** Hand encoders by the message's full protobuf name. */
export const PARTS_ENCODERS: ReadonlyMap<string, PartsEncoder> = new Map([['etcdserverpb.SnapshotResponse', snapshotResponse]]);

/** A serializer whose `parts` gives the message without copying its large field; called itself, it concatenates them. */
export type PartsSerializer = ((value: object) => Buffer) & { parts(value: object): Buffer[] };

export function withParts(generic: (value: object) => Buffer, encoder: PartsEncoder): PartsSerializer {
  const parts = (value: object) => encoder(value) ?? [generic(value)];
  return Object.assign(
    (value: object) => {
      const p = parts(value);
      return p.length === 1 ? p[0] : Buffer.concat(p);
    },
    { parts },
  );
}
