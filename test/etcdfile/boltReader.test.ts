// The bbolt reader and etcd's encodings on small hand-built inputs, and the KV
// import path, without a real etcd.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { BoltDb } from '../../src/etcdfile/boltDb.js';
import { decodeKeyValue, decodeLease, decodeMember, decodeRevisionKey, failed } from '../../src/etcdfile/etcdBuckets.js';
import { BoltFormatError, scanEtcdDb } from '../../src/etcdfile/index.js';
import { fnv1a64 } from '../../src/etcdfile/metaPage.js';
import { encodeKeyValue, KvStore, revisionKey } from '../../src/kv/index.js';
import { branchPage, bucketValue, leafPage, metaPage } from './boltBuilder.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-boltunit-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function write(name: string, pages: Buffer[]): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, Buffer.concat(pages));
  return f;
}

/**
 * pages: 0,1 meta; 2 root leaf {inline bucket "a", bucket "key" at 3};
 * 3 branch → 4, 5 leaves of revisions. `ps` is the page size.
 */
function sampleFile(name: string, ps: number, edit?: (pages: Buffer[]) => void): string {
  const rev = (main: number, value: string) => ({
    key: revisionKey(main, 0, false),
    value: encodeKeyValue({
      key: Buffer.from(`k${main}`),
      main,
      sub: 0,
      createRevision: main,
      version: 1,
      lease: 0n,
      value: Buffer.from(value),
      tombstone: false,
    }),
  });
  const pages = [
    metaPage(0, { pageSize: ps, root: 2, pgid: 6, txid: 8 }),
    metaPage(1, { pageSize: ps, root: 2, pgid: 6, txid: 7 }),
    leafPage(
      2,
      [
        {
          key: 'a',
          value: bucketValue(0, [
            { key: 'x', value: Buffer.from('1') },
            { key: 'y', value: Buffer.from('2') },
          ]),
          bucket: true,
        },
        { key: 'key', value: bucketValue(3), bucket: true },
      ],
      ps,
    ),
    branchPage(
      3,
      [
        { key: revisionKey(2, 0, false).toString('latin1'), page: 4 },
        { key: revisionKey(4, 0, false).toString('latin1'), page: 5 },
      ],
      ps,
    ),
    leafPage(4, [rev(2, 'two'), rev(3, 'three')], ps),
    leafPage(5, [rev(4, 'four')], ps),
  ];
  edit?.(pages);
  return write(name, pages);
}

describe('bbolt reader', () => {
  test('FNV-1a 64 matches the published vectors', () => {
    assert.equal(fnv1a64(Buffer.alloc(0)), 0xcbf29ce484222325n);
    assert.equal(fnv1a64(Buffer.from('a')), 0xaf63dc4c8601ec8cn);
    assert.equal(fnv1a64(Buffer.from('foobar')), 0x85944171f73967e8n);
  });

  test('inline and page-rooted buckets, branch and leaf pages, in key order', () => {
    const f = sampleFile('ok.db', 4096);
    const db = BoltDb.open(f);
    try {
      assert.equal(db.meta.page, 0);
      const a = db.bucket('a')!;
      assert.ok(a.inline);
      assert.deepEqual(
        [...db.entries(a)].map((e) => `${e.key.toString()}=${e.value.toString()}`),
        ['x=1', 'y=2'],
      );
      const key = db.bucket('key')!;
      assert.deepEqual(
        [...db.entries(key)].map((e) => decodeRevisionKey(e.key)),
        [2, 3, 4].map((main) => ({ main, sub: 0, tombstone: false })),
      );
      assert.equal(db.bucket('zzz'), undefined);
    } finally {
      db.close();
    }
    const s = scanEtcdDb(f);
    assert.equal(s.totalKey, 5);
    assert.equal(s.revision, 4);
    assert.equal(s.liveKeys, 3);
  });

  test('page size found from meta page 1 when meta page 0 is damaged; the newer valid meta wins', () => {
    const f = sampleFile('ps1024.db', 1024, (p) => (p[0][16] ^= 0xff));
    const db = BoltDb.open(f);
    try {
      assert.equal(db.pageSize, 1024);
      assert.equal(db.meta.page, 1);
      assert.match(db.otherMetaInvalid!, /meta page 0: bad magic/);
    } finally {
      db.close();
    }
    const newer = sampleFile('newer.db', 4096, (p) => (p[1] = metaPage(1, { pageSize: 4096, root: 2, pgid: 6, txid: 9 })));
    const db2 = BoltDb.open(newer);
    assert.equal(db2.meta.page, 1);
    db2.close();
  });

  const cases: Array<[string, (p: Buffer[]) => void, RegExp]> = [
    [
      'a root page beyond the high-water mark',
      (p) => {
        p[0] = metaPage(0, { pageSize: 4096, root: 9, pgid: 6, txid: 8 });
        p[1] = metaPage(1, { pageSize: 4096, root: 9, pgid: 6, txid: 7 });
      },
      /root bucket page 9 is outside pages 2\.\.5 \(page 0, byte offset 32\)/,
    ],
    [
      'a page that is not where its header says',
      (p) => p[4].writeBigUInt64LE(7n, 0),
      /page header says page 7, but it was read as page 4 \(branch page 3 element 0\) \(page 4, byte offset 16384\)/,
    ],
    [
      'a branch pointing to a meta page',
      (p) => p[3].writeBigUInt64LE(1n, 16 + 8),
      /branch page 3 element 0 points to page 1, a meta page \(page 3, byte offset 12304\)/,
    ],
    ['a branch pointing to itself', (p) => p[3].writeBigUInt64LE(3n, 32 + 8), /cycle: branch page 3 element 1 points back to page 3/],
    ['two branch elements to one page', (p) => p[3].writeBigUInt64LE(4n, 32 + 8), /branch page 3 element 1 points to page 4, which page 3 already references/],
    [
      'an element count beyond the page',
      (p) => p[5].writeUInt16LE(300, 10),
      /page says it holds 300 elements, 4816 bytes, but it has 4096 \(page 5, byte offset 20490\)/,
    ],
    [
      'an inline bucket too short for its page header',
      (p) => (p[2] = leafPage(2, [{ key: 'a', value: Buffer.alloc(20), bucket: true }], 4096)),
      /inline bucket a: 4 bytes cannot hold a page header \(page 2, byte offset 8225\)/,
    ],
    [
      'a key out of order',
      (p) => (p[5] = leafPage(5, [{ key: revisionKey(1, 0, false), value: Buffer.from([10, 1, 0x6b]) }], 4096)),
      /bucket key: key 0x0000000000000001.* comes after 0x0000000000000003.*; keys are out of order/,
    ],
    [
      'a high-water mark past the end of the file',
      (p) => {
        p.pop();
      },
      /truncated: meta page 0 says 6 pages of 4096 bytes \(24576 bytes\), the file has 20480 bytes/,
    ],
  ];
  for (const [what, edit, message] of cases) {
    test(`one clear error: ${what}`, () => {
      const f = sampleFile(`bad-${what.replace(/\W+/g, '-')}.db`, 4096, edit);
      assert.throws(
        () => scanEtcdDb(f),
        (err: Error) => {
          assert.ok(err instanceof BoltFormatError, `${err.name}: ${err.message}`);
          assert.match(err.message, message);
          assert.ok(err.message.startsWith(`etcd db ${f}: `));
          assert.ok(!err.message.includes('\n'));
          return true;
        },
      );
    });
  }
});

describe('etcd encodings', () => {
  test('revision keys, tombstones, and what is not one', () => {
    assert.deepEqual(decodeRevisionKey(revisionKey(7, 2, true)), { main: 7, sub: 2, tombstone: true });
    assert.ok(failed(decodeRevisionKey(Buffer.from('consistent_index'))));
  });

  test('members: an id beyond 2^53 is kept exact and must match its key', () => {
    const json = Buffer.from('{"id":10276657743932975437,"peerURLs":["http://a:2380"],"name":"infra1","clientURLs":["http://a:2379"]}');
    const m = decodeMember(Buffer.from('8e9e05c52164694d'), json);
    assert.ok(!failed(m));
    assert.equal(m.id, 10276657743932975437n);
    assert.equal(m.isLearner, false);
    assert.ok(failed(decodeMember(Buffer.from('1'), json)));
  });

  test('leases and KeyValues', () => {
    const key = Buffer.alloc(8);
    key.writeBigInt64BE(0x694d7f6a2c1b3e01n);
    const lease = Buffer.from([0x08, ...varint(0x694d7f6a2c1b3e01n), 0x10, 0xac, 0x02]);
    assert.deepEqual(decodeLease(key, lease), { id: 0x694d7f6a2c1b3e01n, ttl: 300, remainingTtl: 0 });
    assert.ok(failed(decodeKeyValue(Buffer.from([0x0a, 0x05, 0x61]))));
  });
});

function varint(n: bigint): number[] {
  const out: number[] = [];
  while (n >= 0x80n) {
    out.push(Number(n & 0x7fn) | 0x80);
    n >>= 7n;
  }
  out.push(Number(n));
  return out;
}

describe('KvStore import (the path etcd files come in by)', () => {
  const put = (key: string, value: string, lease = 0n) => ({ key, value, lease });
  // The same history, applied as requests and imported as stored revisions.
  const history: Array<{ key: string; value?: string; lease?: bigint }> = [
    put('a', '1'),
    put('b', '1', 0x1234n),
    put('a', '2'),
    { key: 'b' },
    put('b', '3'),
    put('c', '1'),
    { key: 'a' },
  ];

  function applied(): KvStore {
    const kv = KvStore.open(':memory:');
    history.forEach((h, i) => {
      if (h.lease) kv.apply(i * 2 + 1, 1, (w) => w.cluster.putLease({ id: h.lease!, ttl: 60 }));
      kv.applyRequest(
        i * 2 + 2,
        1,
        h.value === undefined
          ? { deleteRange: { key: Buffer.from(h.key) } }
          : { put: { key: Buffer.from(h.key), value: Buffer.from(h.value), lease: h.lease ?? 0n } },
      );
    });
    return kv;
  }

  function imported(compactAt: number): KvStore {
    const kv = KvStore.open(':memory:');
    const live = new Map<string, { create: number; version: number }>();
    kv.importRevisions(
      history.map((h, i) => {
        const main = i + 2;
        if (h.value === undefined) {
          live.delete(h.key);
          return { key: Buffer.from(h.key), main, sub: 0, createRevision: 0, version: 0, lease: 0n, value: Buffer.alloc(0), tombstone: true };
        }
        const l = live.get(h.key) ?? { create: main, version: 0 };
        l.version++;
        live.set(h.key, l);
        return {
          key: Buffer.from(h.key),
          main,
          sub: 0,
          createRevision: l.create,
          version: l.version,
          lease: h.lease ?? 0n,
          value: Buffer.from(h.value),
          tombstone: false,
        };
      }),
    );
    kv.setRevision(history.length + 1, compactAt);
    kv.apply(1, 1, (w) => w.cluster.putLease({ id: 0x1234n, ttl: 60 }));
    return kv;
  }

  test('imported revisions read and hash exactly as the same requests applied', () => {
    const a = applied();
    const b = imported(-1);
    const all = { key: Buffer.from([0]), rangeEnd: Buffer.from([0]), serializable: true };
    assert.deepEqual(b.range(all).kvs, a.range(all).kvs);
    assert.deepEqual(b.range({ ...all, revision: 4 }).kvs, a.range({ ...all, revision: 4 }).kvs);
    assert.equal(b.currentRevision(), a.currentRevision());
    assert.deepEqual(b.hashKv(), a.hashKv());
    a.close();
    b.close();
  });

  test('a compaction point compacts as etcd does', () => {
    const a = applied();
    a.apply(100, 1, (w) => w.request({ compaction: { revision: 5, physical: true } }));
    const b = imported(5);
    assert.deepEqual(b.hashKv(), a.hashKv());
    assert.equal(b.compactRevision(), 5);
    a.close();
    b.close();
  });

  test('refuses revisions out of order, and any import once entries are applied', () => {
    const kv = KvStore.open(':memory:');
    const r = (main: number) => ({
      key: Buffer.from('k'),
      main,
      sub: 0,
      createRevision: main,
      version: 1,
      lease: 0n,
      value: Buffer.from('v'),
      tombstone: false,
    });
    kv.importRevisions([r(3)]);
    assert.throws(() => kv.importRevisions([r(2)]), /imported revision 2_0 does not come after 3_0/);
    assert.throws(() => kv.setRevision(2, -1), /revision 2 is below the store's 3/);
    kv.setRevision(3, -1);
    kv.apply(1, 1, () => undefined);
    assert.throws(() => kv.importRevisions([r(4)]), /entries up to 1 are applied/);
    kv.close();
  });
});
