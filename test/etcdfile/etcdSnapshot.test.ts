// lifeboat snapshot status / restore on real etcd 3.4 files: a snapshot from
// `etcdctl snapshot save` and a raw member/snap/db of a stopped member, compared
// with etcdctl's own figures and with what the source served; then the damaged
// files operators meet (truncated, a flipped meta byte, a wrong trailer).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KvStore } from '../../src/kv/index.js';
import { kvPath } from '../../src/storage/layout.js';
import type { EtcdCluster } from '../support/etcdCluster.js';
import { freePorts } from '../support/ports.js';
import { etcdctl, lifeboat, ROOT, run } from '../support/tools.js';
import { etcdJson, fillEtcd, startEtcd, startRestoredMember, type FillResult } from './etcdSource.js';

const SEED = 'etcdfile-snapshot';

interface SourceKv {
  key: string;
  value?: string;
  create_revision: string;
  mod_revision: string;
  version: string;
  lease?: string;
}

/** Everything `etcdctl get "" --prefix -w json` returns, by key. */
async function readAll(endpoint: string): Promise<{ revision: string; clusterId: string; kvs: Map<string, SourceKv> }> {
  const r = await etcdctl('--endpoints', endpoint, 'get', '', '--prefix', '-w', 'json');
  assert.equal(r.code, 0, r.stderr);
  const j = etcdJson(r.stdout);
  const kvs = new Map<string, SourceKv>();
  for (const kv of (j.kvs ?? []) as SourceKv[]) kvs.set(Buffer.from(kv.key, 'base64').toString('latin1'), kv);
  return { revision: j.header.revision, clusterId: j.header.cluster_id, kvs };
}

function assertSameKvs(restored: Map<string, SourceKv>, source: Map<string, SourceKv>): void {
  assert.equal(restored.size, source.size, 'key count');
  for (const [key, s] of source) {
    const r = restored.get(key);
    assert.ok(r, `key ${key} is missing after restore`);
    assert.deepEqual(
      { value: r.value ?? '', create: r.create_revision, mod: r.mod_revision, version: r.version, lease: r.lease ?? '0' },
      { value: s.value ?? '', create: s.create_revision, mod: s.mod_revision, version: s.version, lease: s.lease ?? '0' },
      `key ${key}`,
    );
  }
}

async function hashKv(endpoint: string, rev?: string): Promise<{ hash: string; compact: string }> {
  const r = await etcdctl('--endpoints', endpoint, 'endpoint', 'hashkv', ...(rev ? ['--rev', rev] : []), '-w', 'json');
  assert.equal(r.code, 0, r.stderr);
  const h = etcdJson(r.stdout)[0].HashKV;
  return { hash: h.hash, compact: h.compact_revision };
}

function flipByte(src: string, dest: string, offset: number): void {
  const b = Buffer.from(fs.readFileSync(src));
  b[offset] ^= 0x5a;
  fs.writeFileSync(dest, b);
}

function assertNothingWritten(dataDir: string): void {
  assert.ok(!fs.existsSync(dataDir) && !fs.existsSync(`${dataDir}.part`), `a refused restore left ${dataDir} behind`);
}

describe('etcd files: snapshot status and restore against real etcd 3.4', { timeout: 110_000 }, () => {
  let etcd: EtcdCluster | undefined;
  let dir = '';
  let endpoint = '';
  let snap = '';
  let fill: FillResult;
  let source: Awaited<ReturnType<typeof readAll>>;
  let sourceHash: { hash: string; compact: string };
  let peerPorts: number[] = [];

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-etcdfile-'));
    etcd = await startEtcd(SEED);
    endpoint = etcd.endpoints;
    fill = await fillEtcd(endpoint, { keys: 3000, rounds: 3, seed: 8, compactAfter: 1, leases: 3, keysPerLease: 40, bigValues: [10_000, 70_000, 300_000] });
    source = await readAll(endpoint);
    sourceHash = await hashKv(endpoint, source.revision);
    snap = path.join(dir, 'etcd.snap.db');
    const saved = await etcdctl('--endpoints', endpoint, 'snapshot', 'save', snap);
    assert.equal(saved.code, 0, saved.stderr);
    peerPorts = await freePorts(4, SEED);
  });

  after(async () => {
    await etcd?.stop();
    if (dir && !process.env.LIFEBOAT_KEEP_TEST_DIRS) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('status prints what etcdctl snapshot status prints: hash, revision, total keys, total size', async () => {
    const theirs = await etcdctl('snapshot', 'status', snap, '-w', 'json');
    assert.equal(theirs.code, 0, theirs.stderr);
    const e = JSON.parse(theirs.stdout) as { hash: number; revision: number; totalKey: number; totalSize: number };
    const ours = await lifeboat('snapshot', 'status', snap, '-w', 'json');
    assert.equal(ours.code, 0, ours.stderr);
    const s = JSON.parse(ours.stdout);
    assert.equal(s.format, 'etcd');
    // etcdctl's four fields, with its names and types, first and in its order; ours after them.
    assert.deepEqual(Object.keys(s).slice(0, 4), ['hash', 'revision', 'totalKey', 'totalSize']);
    assert.deepEqual({ hash: s.hash, revision: s.revision, totalKey: s.totalKey, totalSize: s.totalSize }, e);
    assert.ok(ours.stdout.startsWith(theirs.stdout.trim().replace(/}$/, ',')), `${ours.stdout}\nvs etcdctl's\n${theirs.stdout}`);
    // Simple (the first line) and table exactly as etcdctl prints them: sizes humanized ("25 kB").
    for (const format of ['simple', 'table']) {
      const t = await etcdctl('snapshot', 'status', snap, '-w', format);
      const o = await lifeboat('snapshot', 'status', snap, '-w', format);
      assert.equal(o.code, 0, o.stderr);
      if (format === 'table') assert.equal(o.stdout, t.stdout);
      else assert.equal(o.stdout.split('\n')[0], t.stdout.trim());
      assert.match(o.stdout, / [kM]B\b/);
    }
    assert.equal(String(s.revision), source.revision);
    assert.equal(s.etcd.trailer, 'verified');
    assert.equal(s.etcd.liveKeys, source.kvs.size);
    assert.equal(s.etcd.compactRevision, fill.compactedAt);
    assert.equal(s.etcd.leases, fill.leases.length);
    assert.equal(s.etcd.clusterVersion, '3.4.0');
    assert.deepEqual(
      s.members.map((m: { name: string }) => m.name),
      ['infra1'],
    );
    // etcd keeps no cluster ID in its backend; membership never changed, so the derived one is the real one.
    assert.equal(BigInt(`0x${s.clusterId}`).toString(), source.clusterId);
    const simple = await lifeboat('snapshot', 'status', snap);
    assert.match(simple.stdout, /database sha256 [0-9a-f]{64} \(the trailer.s digest of the database, verified\)/);
  });

  test('restore: every key, value, create/mod revision, version and lease; the revision, history and HashKV; the leases', async () => {
    const target = path.join(dir, 'restored');
    const peer = `http://127.0.0.1:${peerPorts[0]}`;
    const r = await lifeboat('snapshot', 'restore', snap, '--data-dir', target, '--name', 'r1', '--initial-advertise-peer-urls', peer, '-w', 'json');
    assert.equal(r.code, 0, r.stderr);
    const res = JSON.parse(r.stdout);
    assert.equal(res.keys, source.kvs.size);
    assert.equal(String(res.revision), source.revision);
    assert.equal(BigInt(`0x${res.parentClusterId}`).toString(), source.clusterId);
    assert.notEqual(res.clusterId, res.parentClusterId);
    assert.ok(!fs.existsSync(`${target}.part`));

    const kv = KvStore.open(kvPath(target), { readonly: true });
    try {
      const leases = kv.cluster.leases().map((l) => ({ id: l.id.toString(), ttl: l.ttl }));
      assert.deepEqual(
        leases.sort((a, b) => a.id.localeCompare(b.id)),
        [...fill.leases].sort((a, b) => a.id.localeCompare(b.id)),
      );
      assert.equal(kv.compactRevision(), fill.compactedAt);
    } finally {
      kv.close();
    }

    const m = await startRestoredMember(target, 'r1', peer, SEED);
    try {
      const restored = await readAll(m.client);
      assert.equal(restored.revision, source.revision);
      assert.equal(BigInt(restored.clusterId).toString(16), res.clusterId);
      assertSameKvs(restored.kvs, source.kvs);
      // Every stored revision came over as it was: HashKV agrees with etcd's at that revision.
      assert.deepEqual(await hashKv(m.client), sourceHash);
      // History above the compaction point reads the same; below it is compacted on both.
      const rev = String(fill.compactedAt + 1);
      const histSource = await etcdctl('--endpoints', endpoint, 'get', 'k/', '--prefix', '--rev', rev, '-w', 'json');
      const histRestored = await etcdctl('--endpoints', m.client, 'get', 'k/', '--prefix', '--rev', rev, '-w', 'json');
      assert.equal(histSource.code, 0, histSource.stderr);
      assert.ok(etcdJson(histSource.stdout).count > 2000);
      assert.deepEqual(etcdJson(histRestored.stdout).kvs, etcdJson(histSource.stdout).kvs);
      const old = await etcdctl('--endpoints', m.client, 'get', 'k/00002', '--rev', String(fill.compactedAt - 1));
      assert.match(old.stderr, /required revision has been compacted/);
    } finally {
      await m.stop();
    }
  });

  test('restore of an etcd snapshot draws the bytes read on a terminal, and nothing in scripts', async () => {
    const peer = `http://127.0.0.1:${peerPorts[0]}`;
    const args = (d: string) => [
      path.join(ROOT, 'bin', 'run.js'),
      'snapshot',
      'restore',
      snap,
      '--data-dir',
      path.join(dir, d),
      '--name',
      'r1',
      '--initial-advertise-peer-urls',
      peer,
    ];
    const quiet = await run(process.execPath, args('quiet'));
    assert.equal(quiet.code, 0, quiet.stderr);
    assert.equal(quiet.stderr, '', 'no progress without a terminal');
    // script(1) gives the command a terminal; what it drew comes back on script's stdout.
    const tty = await run('script', ['-qefc', [process.execPath, ...args('tty')].join(' '), '/dev/null']);
    assert.equal(tty.code, 0, tty.stdout + tty.stderr);
    assert.match(tty.stdout, /\rrestore \[[#.]{30}\] +\d+% [\d.]+ [kM]?B \/ [\d.]+ [kM]?B/, JSON.stringify(tty.stdout.slice(0, 400)));
  });

  test('restore with --bump-revision and --mark-compacted', async () => {
    const target = path.join(dir, 'bumped');
    const r = await lifeboat(
      'snapshot',
      'restore',
      snap,
      '--data-dir',
      target,
      '--name',
      'b1',
      '--initial-advertise-peer-urls',
      `http://127.0.0.1:${peerPorts[1]}`,
      '--bump-revision',
      '1000',
      '--mark-compacted',
      '-w',
      'json',
    );
    assert.equal(r.code, 0, r.stderr);
    const res = JSON.parse(r.stdout);
    assert.equal(res.revision, Number(source.revision) + 1000);
    assert.equal(res.keys, source.kvs.size);
    const kv = KvStore.open(kvPath(target), { readonly: true });
    try {
      assert.equal(kv.compactRevision(), Number(source.revision) + 1000);
    } finally {
      kv.close();
    }
  });

  test('damaged snapshots: truncated, a flipped meta byte, a wrong trailer — the documented error, nothing written', async () => {
    const common = ['--name', 'x', '--initial-advertise-peer-urls', 'http://127.0.0.1:1'];
    const target = path.join(dir, 'never');
    const size = fs.statSync(snap).size;

    const truncated = path.join(dir, 'truncated.db');
    fs.writeFileSync(truncated, fs.readFileSync(snap).subarray(0, Math.floor(size / 2) + 100));
    // Said truncated, as snapshot status says it, with or without --skip-hash-check (not "a raw member/snap/db?").
    const saysTruncated = new RegExp(
      `^Error: snapshot ${truncated} is truncated \\(meta page \\d says \\d+ pages of 4096 bytes .*\\); copy it again or save a new one\n$`,
    );
    const t1 = await lifeboat('snapshot', 'restore', truncated, '--data-dir', target, ...common);
    assert.equal(t1.code, 1, t1.stderr);
    assert.match(t1.stderr, saysTruncated);
    assert.doesNotMatch(t1.stderr, /skip-hash-check/);
    assertNothingWritten(target);
    const t2 = await lifeboat('snapshot', 'restore', truncated, '--data-dir', target, ...common, '--skip-hash-check');
    assert.equal(t2.code, 1, t2.stderr);
    assert.match(t2.stderr, saysTruncated);
    assertNothingWritten(target);
    const t3 = await lifeboat('snapshot', 'status', truncated);
    assert.equal(t3.code, 1);
    assert.match(t3.stderr, saysTruncated);

    // Meta page 0's root pointer: the checksum no longer matches. bbolt (and so
    // etcdctl) falls back to meta page 1; restore refuses on the sha256 first.
    const metaFlip = path.join(dir, 'meta-flip.db');
    flipByte(snap, metaFlip, 16 + 16);
    const m1 = await lifeboat('snapshot', 'restore', metaFlip, '--data-dir', target, ...common);
    assert.equal(m1.code, 1, m1.stderr);
    assert.match(m1.stderr, /^Error: expected sha256 [0-9a-f]{64}, got [0-9a-f]{64}/);
    assertNothingWritten(target);
    const m2 = await lifeboat('snapshot', 'status', metaFlip, '-w', 'json');
    assert.equal(m2.code, 0, m2.stderr);
    const ms = JSON.parse(m2.stdout);
    assert.equal(ms.etcd.trailer, 'mismatch');
    assert.equal(ms.etcd.metaPage, 1);
    assert.match(ms.etcd.otherMetaInvalid, /meta page 0: bad checksum/);
    const theirs = JSON.parse((await etcdctl('snapshot', 'status', metaFlip, '-w', 'json')).stdout);
    assert.equal(ms.hash, theirs.hash);
    const both = path.join(dir, 'both-meta.db');
    flipByte(metaFlip, both, 4096 + 16 + 40);
    const m3 = await lifeboat('snapshot', 'status', both);
    assert.equal(m3.code, 1);
    assert.match(m3.stderr, /both meta pages are invalid: meta page 0: bad checksum .*; meta page 1 \(at page size 4096\): bad checksum/);

    const wrongTrailer = path.join(dir, 'wrong-trailer.db');
    flipByte(snap, wrongTrailer, size - 1);
    const w1 = await lifeboat('snapshot', 'restore', wrongTrailer, '--data-dir', target, ...common);
    assert.equal(w1.code, 1);
    assert.match(w1.stderr, /^Error: expected sha256 /);
    assertNothingWritten(target);
    const w2 = JSON.parse((await lifeboat('snapshot', 'status', wrongTrailer, '-w', 'json')).stdout);
    assert.equal(w2.etcd.trailer, 'mismatch');
  });

  test('a raw member/snap/db of a stopped member: status as etcdctl; restore needs --skip-hash-check', async () => {
    const member = etcd!.members[0];
    await etcd!.stopMember(member);
    const raw = path.join(dir, 'raw.db');
    fs.copyFileSync(path.join(member.dataDir, 'member', 'snap', 'db'), raw);
    const theirs = await etcdctl('snapshot', 'status', raw, '-w', 'json');
    assert.equal(theirs.code, 0, theirs.stderr);
    const e = JSON.parse(theirs.stdout);
    const s = JSON.parse((await lifeboat('snapshot', 'status', raw, '-w', 'json')).stdout);
    assert.deepEqual({ hash: s.hash, revision: s.revision, totalKey: s.totalKey, totalSize: s.totalSize }, e);
    assert.equal(s.etcd.trailer, 'absent');

    const target = path.join(dir, 'from-raw');
    const peer = `http://127.0.0.1:${peerPorts[2]}`;
    const refused = await lifeboat('snapshot', 'restore', raw, '--data-dir', target, '--name', 'w1', '--initial-advertise-peer-urls', peer);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /^Error: snapshot missing hash but --skip-hash-check=false/);
    assertNothingWritten(target);
    const ok = await lifeboat(
      'snapshot',
      'restore',
      raw,
      '--skip-hash-check',
      '--data-dir',
      target,
      '--name',
      'w1',
      '--initial-advertise-peer-urls',
      peer,
      '-w',
      'json',
    );
    assert.equal(ok.code, 0, ok.stderr);
    const m = await startRestoredMember(target, 'w1', peer, SEED);
    try {
      const restored = await readAll(m.client);
      assert.equal(restored.revision, source.revision);
      assertSameKvs(restored.kvs, source.kvs);
      assert.deepEqual(await hashKv(m.client), sourceHash);
    } finally {
      await m.stop();
    }
  });
});
