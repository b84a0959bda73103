// Lease grants and revocations as Raft entries: etcd's InternalRaftRequest field
// numbers (lease_grant=8, lease_revoke=9), invisible to the KV decoder, and the
// apply rules (exists, not found, too large) on a real store.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ErrLeaseExist, ErrLeaseTTLTooLarge } from '../../src/common/memberErrors.js';
import { ErrLeaseNotFound } from '../../src/kv/errors.js';
import { decodeKvRequest, encodeKvRequest } from '../../src/kv/index.js';
import { createLogger } from '../../src/server/logger.js';
import { leaseHex, Leases, MAX_LEASE_TTL, minLeaseTtl } from '../../src/server/leases.js';
import { decodeServerRequest, encodeServerRequest } from '../../src/kv/requestCodec.js';
import { Applier, b } from '../kv/kvFixture.js';

describe('lease requests', () => {
  test('grant and revoke round-trip, with the proposer ID; the KV decoder skips them', () => {
    const big = 0x7fff_ffff_ffff_fff1n;
    const g = encodeServerRequest({ leaseGrant: { id: big, ttl: 60 } }, 42n);
    assert.deepEqual(decodeServerRequest(g), { leaseGrant: { id: big, ttl: 60 } });
    assert.deepEqual(decodeKvRequest(g), { id: 42n });
    const r = encodeServerRequest({ leaseRevoke: { id: -5n } }, 7n);
    assert.deepEqual(decodeServerRequest(r), { leaseRevoke: { id: -5n } });
    assert.equal(decodeServerRequest(encodeKvRequest({ put: { key: b('k'), value: b('v') } }, 1n)), undefined);
    // etcd's encoding: field 8 (LeaseGrantRequest{TTL=1, ID=2}), field 9 (LeaseRevokeRequest{ID=1}).
    assert.equal(g[2], (8 << 3) | 2);
    assert.equal(r[2], (9 << 3) | 2);
  });

  test('apply: grant once, revoke deletes the keys in one revision, errors as etcd', () => {
    const a = Applier.memory();
    const leases = new Leases(
      {
        log: createLogger({}, 'silent'),
        kv: () => a.kv,
        isLeader: () => false,
        hasLeader: () => false,
        leaderCaughtUp: () => false,
        proposeLease: () => Promise.resolve({}),
        forwardToLeader: () => Promise.resolve({ json: '', error_code: 0, error_message: '' }),
        stopping: () => false,
      },
      { electionMs: 1000, requestTimeoutMs: 1000 },
    );
    const apply = <T>(fn: Parameters<typeof a.kv.apply<T>>[2]) => a.kv.apply(a.kv.appliedIndex() + 1, 1, fn);
    assert.equal(
      apply((w) => leases.applyGrant(w, 5n, 10)),
      undefined,
    );
    assert.equal(
      apply((w) => leases.applyGrant(w, 5n, 10)),
      ErrLeaseExist,
    );
    assert.equal(
      apply((w) => leases.applyGrant(w, 6n, MAX_LEASE_TTL + 1)),
      ErrLeaseTTLTooLarge,
    );
    a.put('x', '1', { lease: 5n });
    a.put('y', '2', { lease: 5n });
    a.put('z', '3');
    const before = a.kv.currentRevision();
    assert.equal(
      apply((w) => leases.applyRevoke(w, 5n)),
      undefined,
    );
    assert.equal(a.kv.currentRevision(), before + 1, 'one revision for every key of the lease');
    assert.deepEqual(
      a.get('\0', '\0').kvs.map((kv) => kv.key.toString()),
      ['z'],
    );
    assert.equal(
      apply((w) => leases.applyRevoke(w, 5n)),
      ErrLeaseNotFound,
    );
    assert.equal(a.kv.cluster.lease(5n), undefined);
  });

  test('minimum TTL is 1.5 election timeouts in whole seconds; IDs print as etcdctl does', () => {
    assert.equal(minLeaseTtl(1000), 2);
    assert.equal(minLeaseTtl(500), 1);
    assert.equal(minLeaseTtl(5000), 8);
    assert.equal(leaseHex(0x694d71ddacfda227n), '694d71ddacfda227');
    assert.equal(leaseHex(5n), '0000000000000005');
  });
});
