// Lease grants and revocations, in etcd's InternalRaftRequest fields and messages:
// lease_grant=8: LeaseGrantRequest{TTL=1, ID=2}; lease_revoke=9: LeaseRevokeRequest{ID=1}.

import { ProtoReader, type ProtoWriter } from '../common/protobufWire.js';

export type LeaseRequest = { leaseGrant: { id: bigint; ttl: number } } | { leaseRevoke: { id: bigint } };

const F = { leaseGrant: 8, leaseRevoke: 9 } as const;

/** Writes the request as its InternalRaftRequest field. */
export function writeLeaseRequest(w: ProtoWriter, request: LeaseRequest): void {
  if ('leaseGrant' in request) {
    const g = request.leaseGrant;
    w.message(F.leaseGrant, (m) => m.int(1, g.ttl).int(2, g.id));
  } else {
    const lease = request.leaseRevoke.id;
    w.message(F.leaseRevoke, (m) => m.int(1, lease));
  }
}

/** The lease request in InternalRaftRequest field `field`, if it is one of theirs. */
export function readLeaseRequest(field: number, data: Uint8Array): LeaseRequest | undefined {
  if (field === F.leaseGrant) return { leaseGrant: readLeaseGrant(data) };
  if (field === F.leaseRevoke) return { leaseRevoke: { id: readLeaseId(data) } };
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

function readLeaseId(data: Uint8Array): bigint {
  const r = new ProtoReader(data);
  let id = 0n;
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1) id = r.int64();
    else r.skip(wire);
  }
  return id;
}
