// etcd's --max-txn-ops and --max-request-bytes on real members: a default member
// refuses a Txn of more operations, or a request of more bytes, with etcd's error,
// and one started with higher limits takes the same requests. Txns through
// etcdctl; large puts as raw gRPC calls (etcdctl sends at most 2 MiB itself).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LifeboatCluster, etcdctl, run } from '../support/lifeboatCluster.js';
import { rawUnary } from '../support/rawUnary.js';

const MiB = 1024 * 1024;

describe('--max-txn-ops and --max-request-bytes', () => {
  let plain: LifeboatCluster;
  let raised: LifeboatCluster;

  before(async () => {
    [plain, raised] = await Promise.all([
      LifeboatCluster.start('limits-default', 1),
      LifeboatCluster.start('limits-raised', 1, ['--max-txn-ops', '300', '--max-request-bytes', String(3 * MiB)]),
    ]);
  });
  after(async () => {
    await Promise.all([plain?.stopAll(), raised?.stopAll()]);
  });

  /** `etcdctl txn` of `ops` puts (no compares, no failure branch). */
  function txn(c: LifeboatCluster, prefix: string, ops: number) {
    const puts = Array.from({ length: ops }, (_, i) => `put ${prefix}${i} v`).join('\n');
    return run('etcdctl', ['--endpoints', c.endpoints()[0], '--command-timeout=20s', 'txn'], { input: `\n${puts}\n\n\n`, env: { ETCDCTL_API: '3' } });
  }

  const keyCount = async (c: LifeboatCluster, prefix: string) => {
    const r = await etcdctl(c.endpoints(), 'get', prefix, '--prefix', '--keys-only', '--limit', '1', '-w', 'json');
    assert.equal(r.code, 0, r.stderr);
    return Number(JSON.parse(r.stdout).count ?? 0);
  };

  test("a Txn of 300 operations: a default member refuses it with etcd's error (128 taken), one started with --max-txn-ops 300 takes it", async () => {
    const refused = await txn(plain, 'a', 300);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /etcdserver: too many operations in txn request/);
    assert.equal(await keyCount(plain, 'a'), 0);
    const atDefault = await txn(plain, 'b', 128);
    assert.equal(atDefault.code, 0, atDefault.stderr);
    assert.equal(await keyCount(plain, 'b'), 128);

    const taken = await txn(raised, 'a', 300);
    assert.equal(taken.code, 0, taken.stderr);
    assert.equal(await keyCount(raised, 'a'), 300);
    const over = await txn(raised, 'c', 301);
    assert.match(over.stderr, /etcdserver: too many operations in txn request/);
  });

  test("a 2.2 MiB put: a default member (2 MiB) refuses it with etcd's error, one started with --max-request-bytes 3 MiB takes it; past the gRPC limit it is refused unread", async () => {
    const put = (c: LifeboatCluster, key: string, bytes: number) =>
      rawUnary(c.endpoints()[0], 'etcdserverpb.KV', 'Put', { key: Buffer.from(key), value: Buffer.alloc(bytes, 'a') }, '20S');
    const status = async (p: ReturnType<typeof put>) => {
      const a = await p;
      return [a.code, a.details];
    };
    assert.deepEqual(await status(put(plain, 'under', 1.9 * MiB)), [0, 'OK']);
    assert.deepEqual(await status(put(plain, 'mid', 2.2 * MiB)), [3, 'etcdserver: request is too large']);
    // Past --max-request-bytes + 512 KiB the message is refused before it is read, as etcd's gRPC server does.
    const [code, details] = await status(put(plain, 'past', 2.8 * MiB));
    assert.equal(code, 8);
    assert.match(String(details), /^Received message larger than max \(\d+ vs 2621440\)$/);

    assert.deepEqual(await status(put(raised, 'mid', 2.2 * MiB)), [0, 'OK']);
    assert.deepEqual(await status(put(raised, 'past', 2.8 * MiB)), [0, 'OK']);
    assert.deepEqual(await status(put(raised, 'over', 3.2 * MiB)), [3, 'etcdserver: request is too large']);

    const got = await etcdctl(raised.endpoints(), 'get', 'past', '--print-value-only');
    assert.equal(got.code, 0, got.stderr);
    assert.equal(got.stdout.trimEnd().length, Math.floor(2.8 * MiB));
    assert.equal(await keyCount(plain, 'mid'), 0);
    assert.equal(await keyCount(plain, 'past'), 0);
  });
});
