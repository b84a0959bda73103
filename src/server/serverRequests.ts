// Requests the member itself puts in the log besides KV requests: a member
// publishing its name and client URLs, and alarm changes. They ride in the same
// InternalRaftRequest-style message as KV requests (src/kv/requestCodec.ts), in
// fields the KV decoder skips, so one entry is one request of either kind.
import { ProtoReader, ProtoWriter } from '../kv/protobufWire.js';
import { AlarmType } from '../kv/types.js';

const F = { id: 1, alarm: 10, publish: 20 } as const;

export type ServerRequest =
  | { publish: { memberId: bigint; name: string; clientURLs: string[] } }
  | { alarm: { action: 'ACTIVATE' | 'DEACTIVATE'; memberId: bigint; alarm: AlarmType } };

export function encodeServerRequest(req: ServerRequest, id: bigint): Buffer {
  const w = new ProtoWriter(128);
  w.int(F.id, id);
  if ('publish' in req) {
    const p = req.publish;
    w.bytes(F.publish, Buffer.from(JSON.stringify({ id: p.memberId.toString(16), name: p.name, clientURLs: p.clientURLs })));
  } else {
    const a = req.alarm;
    w.bytes(F.alarm, Buffer.from(JSON.stringify({ action: a.action, memberId: a.memberId.toString(16), alarm: a.alarm })));
  }
  return w.finish();
}

/** The server request in an entry, if it holds one (KV requests yield undefined). */
export function decodeServerRequest(data: Uint8Array): ServerRequest | undefined {
  const r = new ProtoReader(data);
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === F.publish) {
      const j = JSON.parse(r.bytes().toString('utf8')) as { id: string; name: string; clientURLs: string[] };
      return { publish: { memberId: BigInt('0x' + j.id), name: j.name, clientURLs: j.clientURLs } };
    }
    if (field === F.alarm) {
      const j = JSON.parse(r.bytes().toString('utf8')) as { action: 'ACTIVATE' | 'DEACTIVATE'; memberId: string; alarm: AlarmType };
      return { alarm: { action: j.action, memberId: BigInt('0x' + j.memberId), alarm: j.alarm } };
    }
    r.skip(wire);
  }
  return undefined;
}
