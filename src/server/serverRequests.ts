// Requests the member itself puts in the log besides KV requests: a member
// publishing its name and client URLs, alarm changes, and lease grants and
// revocations. They ride in the same InternalRaftRequest-style message as KV
// requests (src/kv/requestCodec.ts), in fields the KV decoder skips, so one entry
// is one request of either kind. Leases use etcd's field numbers and messages
// (lease_grant=8: LeaseGrantRequest{TTL=1, ID=2}; lease_revoke=9: LeaseRevokeRequest{ID=1}).
import { ProtoReader, ProtoWriter } from '../kv/protobufWire.js';
import { AlarmType } from '../kv/types.js';

const F = { id: 1, leaseGrant: 8, leaseRevoke: 9, alarm: 10, publish: 20 } as const;

export type ServerRequest =
  | { publish: { memberId: bigint; name: string; clientURLs: string[] } }
  | { alarm: { action: 'ACTIVATE' | 'DEACTIVATE'; memberId: bigint; alarm: AlarmType } }
  | { leaseGrant: { id: bigint; ttl: number } }
  | { leaseRevoke: { id: bigint } };

export function encodeServerRequest(req: ServerRequest, id: bigint): Buffer {
  const w = new ProtoWriter(128);
  w.int(F.id, id);
  if ('publish' in req) {
    const p = req.publish;
    w.bytes(F.publish, Buffer.from(JSON.stringify({ id: p.memberId.toString(16), name: p.name, clientURLs: p.clientURLs })));
  } else if ('leaseGrant' in req) {
    const g = req.leaseGrant;
    w.message(F.leaseGrant, (m) => m.int(1, g.ttl).int(2, g.id));
  } else if ('leaseRevoke' in req) {
    const id = req.leaseRevoke.id;
    w.message(F.leaseRevoke, (m) => m.int(1, id));
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
    if (field === F.leaseGrant) return { leaseGrant: readLeaseGrant(r.bytes()) };
    if (field === F.leaseRevoke) return { leaseRevoke: { id: readLeaseId(r.bytes(), 1) } };
    r.skip(wire);
  }
  return undefined;
}

function readLeaseGrant(data: Uint8Array): { id: bigint; ttl: number } {
  const r = new ProtoReader(data);
  const g = { id: 0n, ttl: 0 };
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1) g.ttl = r.int64Number();
    else if (field === 2) g.id = r.int64();
    else r.skip(wire);
  }
  return g;
}

function readLeaseId(data: Uint8Array, idField: number): bigint {
  const r = new ProtoReader(data);
  let id = 0n;
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === idField) id = r.int64();
    else r.skip(wire);
  }
  return id;
}
