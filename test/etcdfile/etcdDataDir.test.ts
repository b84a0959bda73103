// `datadir inspect` and `recover plan --from-data-dir` on a real etcd 3.4 member's
// data dir: the figures agree with what etcdctl reported while it ran, passwords
// from auth entries never appear, nothing in the tree changes (checked by hashing
// it, and by running on a read-only bind mount), a running member is refused, a
// separate --wal-dir is read, damage is named by file and offset, and entries
// past the commit index are listed by kind.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EtcdCluster, type EtcdMember } from '../support/etcdCluster.js';
import { etcdctl, expectOk, failsWithOneLine, lifeboat, run } from '../support/tools.js';
import { lifeboatOnReadOnlyMount, treeState } from '../recovery/treeState.js';
import { listWalSegments, scanWal, WAL_RECORD } from '../../src/etcdfile/walRecord.js';
import { decodeEntry } from '../../src/etcdfile/raftpbCodec.js';
import { etcdJson } from './etcdSource.js';
import { cutTrailingHardStates, encodeEntry, endOfRecords, readRecords, writeSegment } from './walFixture.js';

const PASSWORD = 'Alice-Secret-pw-1';
const NEW_PASSWORD = 'Alice-Changed-pw-2';

interface Seen {
  memberId: string;
  clusterId: string;
  revision: number;
  raftIndex: number;
  keys: number;
  hash: number;
  learnerId: string;
}

describe('an etcd 3.4 data dir, read-only', () => {
  let cluster: EtcdCluster;
  let m: EtcdMember;
  let seen: Seen;
  /** Copies made by tests, removed with the cluster's dir. */
  let scratch: string;

  const copyDir = (name: string): string => {
    const to = path.join(scratch, name);
    fs.cpSync(m.dataDir, to, { recursive: true, preserveTimestamps: true });
    return to;
  };

  before(async () => {
    cluster = await EtcdCluster.start({ size: 1, portSeed: 'etcdDataDir.test' });
    m = cluster.members[0]!;
    scratch = path.join(cluster.dir, 'scratch');
    fs.mkdirSync(scratch);
    const ep = cluster.endpoints;
    expectOk(await etcdctl('--endpoints', ep, 'put', 'a', '1'));
    expectOk(await etcdctl('--endpoints', ep, 'put', 'b', '2'));
    expectOk(await run('etcdctl', ['--endpoints', ep, 'txn'], { env: { ...process.env, ETCDCTL_API: '3' }, input: '\nput c 3\nput d 4\n\nput e 5\n\n' }));
    expectOk(await etcdctl('--endpoints', ep, 'del', 'b'));
    const [, peer] = await cluster.freePorts();
    const added = expectOk(await etcdctl('--endpoints', ep, 'member', 'add', 'l1', '--learner', '--peer-urls', `http://127.0.0.1:${peer}`));
    const learnerId = /Member\s+([0-9a-f]+) added/.exec(added)?.[1];
    assert.ok(learnerId, `etcdctl member add printed: ${JSON.stringify(added)}`);
    expectOk(await etcdctl('--endpoints', ep, 'user', 'add', `alice:${PASSWORD}`));
    expectOk(
      await run('etcdctl', ['--endpoints', ep, 'user', 'passwd', 'alice', '--interactive=false'], {
        env: { ...process.env, ETCDCTL_API: '3' },
        input: `${NEW_PASSWORD}\n`,
      }),
    );
    const status = etcdJson(expectOk(await etcdctl('--endpoints', ep, 'endpoint', 'status', '-w', 'json')))[0].Status;
    const hashkv = etcdJson(expectOk(await etcdctl('--endpoints', ep, 'endpoint', 'hashkv', '-w', 'json')))[0].HashKV;
    const count = etcdJson(expectOk(await etcdctl('--endpoints', ep, 'get', '', '--prefix', '--keys-only', '-w', 'json')));
    seen = {
      memberId: BigInt(status.header.member_id).toString(16),
      clusterId: BigInt(status.header.cluster_id).toString(16),
      revision: Number(status.header.revision),
      raftIndex: Number(status.raftIndex),
      keys: Number(count.count),
      hash: Number(hashkv.hash),
      learnerId,
    };
  });
  after(async () => cluster?.stop());

  test('a running etcd member: its locked data dir is refused with exit 3 by inspect and plan', async () => {
    const r = await lifeboat('datadir', 'inspect', m.dataDir);
    failsWithOneLine(r, 3, `${m.dataDir} is locked by etcd pid ${m.proc!.pid}`, 'stop it first');
    const p = await lifeboat('recover', 'plan', '--from-data-dir', m.dataDir);
    assert.equal(p.code, 3, p.stderr);
    assert.match(p.stderr, /locked/);
    await cluster.stopMember(m);
  });

  test('inspect reports what etcdctl reported: member, cluster, revision, keys, consistent index, hash, learner', async () => {
    const r = JSON.parse(expectOk(await lifeboat('datadir', 'inspect', m.dataDir, '-w', 'json')));
    assert.equal(r.runtime, 'etcd');
    assert.equal(r.memberId, seen.memberId);
    assert.equal(r.clusterId, seen.clusterId);
    assert.equal(r.kvRevision, seen.revision);
    assert.equal(r.keyCount, seen.keys);
    assert.equal(r.appliedIndex, seen.raftIndex);
    assert.equal(r.etcd.consistentIndex, seen.raftIndex);
    assert.equal(r.commitIndex, seen.raftIndex);
    assert.equal(r.lastIndex, seen.raftIndex);
    assert.equal(r.hash, seen.hash, 'the hash etcdctl endpoint hashkv printed');
    assert.deepEqual(r.voters, [seen.memberId]);
    assert.deepEqual(r.learners, [seen.learnerId]);
    assert.ok(r.members.some((x: { id: string; isLearner: boolean }) => x.id === seen.learnerId && x.isLearner));
    assert.equal(r.uncommitted.count, 0);
    assert.deepEqual(r.damage, []);
    // etcd 3.4 writes its own membership and version through the v2 store: counted, none on v2 keys.
    assert.ok(r.etcd.v2.walRequests >= 2);
    assert.equal(r.etcd.v2.walKeyRequests, 0);
    const text = expectOk(await lifeboat('datadir', 'inspect', m.dataDir));
    assert.match(text, new RegExp(`member +${seen.memberId.padStart(16, '0')}`));
    assert.match(text, new RegExp(`kv revision +${seen.revision} `));
    assert.match(text, new RegExp(`applied index +${seen.raftIndex} \\(the backend’s consistent index\\)`));
  });

  test('nothing in the tree changes: names, sizes, mtimes and contents equal after inspect and plan', async () => {
    const before = treeState(m.dataDir);
    expectOk(await lifeboat('datadir', 'inspect', m.dataDir));
    expectOk(await lifeboat('datadir', 'inspect', m.dataDir, '-w', 'json'));
    expectOk(await lifeboat('recover', 'plan', '--from-data-dir', m.dataDir));
    expectOk(await lifeboat('recover', 'plan', '--from-data-dir', m.dataDir, '-w', 'json'));
    assert.deepEqual(treeState(m.dataDir), before);
  });

  test('on a read-only bind mount inspect and plan work (any write would fail)', async () => {
    const r = await lifeboatOnReadOnlyMount(m.dataDir, 'datadir', 'inspect', m.dataDir, '-w', 'json');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).memberId, seen.memberId);
    const p = await lifeboatOnReadOnlyMount(m.dataDir, 'recover', 'plan', '--from-data-dir', m.dataDir);
    assert.equal(p.code, 0, p.stderr);
    assert.match(p.stdout, /\(etcd\)/);
  });

  test('--wal-dir: a WAL kept apart (etcd --wal-dir) is read from there', async () => {
    const dir = copyDir('walapart');
    const walDir = path.join(scratch, 'walapart-wal');
    fs.renameSync(path.join(dir, 'member', 'wal'), walDir);
    const without = await lifeboat('datadir', 'inspect', dir);
    failsWithOneLine(without, 1, path.join(dir, 'member', 'wal'), '--wal-dir');
    const r = JSON.parse(expectOk(await lifeboat('datadir', 'inspect', dir, '--wal-dir', walDir, '-w', 'json')));
    assert.equal(r.lastIndex, seen.raftIndex);
    assert.equal(r.etcd.walDir, walDir);
    const p = JSON.parse(expectOk(await lifeboat('recover', 'plan', '--from-data-dir', dir, '--wal-dir', walDir, '-w', 'json')));
    assert.equal(p.sources[0].report.memberId, seen.memberId);
    const missing = await lifeboat('datadir', 'inspect', dir, '--wal-dir', path.join(scratch, 'nope'));
    failsWithOneLine(missing, 2, 'does not exist');
  });

  test('a damaged WAL is reported with the file and byte offset, never used', async () => {
    const dir = copyDir('damaged');
    const walDir = path.join(dir, 'member', 'wal');
    const segments = listWalSegments(walDir);
    const file = segments[0].file;
    const put = scanWal(segments).records.find((x) => x.type === WAL_RECORD.entry && decodeEntry(x.data).index === 5)!;
    const bytes = fs.readFileSync(file);
    bytes[put.offset + 8 + 20] ^= 0x40; // a byte of the entry's data
    fs.writeFileSync(file, bytes);
    const r = await lifeboat('datadir', 'inspect', dir);
    failsWithOneLine(r, 1, file, `byte offset ${put.offset}`, 'CRC mismatch');
    const p = await lifeboat('recover', 'plan', '--from-data-dir', dir);
    assert.notEqual(p.code, 0);
    assert.match(p.stderr, new RegExp(`byte offset ${put.offset}`));

    // A bad record type (the type is outside the CRC).
    bytes[put.offset + 8 + 20] ^= 0x40;
    bytes[put.offset + 8 + 1] = 9;
    fs.writeFileSync(file, bytes);
    failsWithOneLine(await lifeboat('datadir', 'inspect', dir), 1, file, `byte offset ${put.offset}`, 'bad record type 9');
  });

  test('trailing hard states cut off: the entries past the commit index are listed by kind, passwords redacted', async () => {
    const dir = copyDir('tail');
    const n = 5;
    const cut = cutTrailingHardStates(path.join(dir, 'member', 'wal'), n);
    const r = JSON.parse(expectOk(await lifeboat('datadir', 'inspect', dir, '-w', 'json')));
    assert.equal(r.commitIndex, cut.commit);
    assert.equal(r.lastIndex, cut.to);
    assert.deepEqual({ count: r.uncommitted.count, from: r.uncommitted.from, to: r.uncommitted.to }, { count: n, from: cut.from, to: cut.to });
    // txn, delete, add learner, user add, user passwd
    assert.deepEqual(r.uncommitted.kinds, { txn: 1, delete: 1, 'member change': 1, auth: 2 });
    assert.equal(r.uncommitted.confChanges, 1);
    const texts = r.uncommitted.entries.map((e: { text: string }) => e.text);
    assert.match(texts[0], /^txn: 0 compares; then put "c", put "d"; else put "e"$/);
    assert.match(texts[2], new RegExp(`^add learner ${seen.learnerId} `));
    assert.equal(texts[3], 'user add "alice" (password redacted)');
    assert.equal(texts[4], 'user change password "alice" (password redacted)');
    const text = expectOk(await lifeboat('datadir', 'inspect', dir));
    assert.match(text, new RegExp(`past commit +${n} entries \\(${cut.from}\\.\\.${cut.to}\\): 1 txn, 1 delete, 1 member change, 2 auth`));
    const plan = await lifeboat('recover', 'plan', '--from-data-dir', dir);
    const planJson = await lifeboat('recover', 'plan', '--from-data-dir', dir, '-w', 'json');
    for (const out of [JSON.stringify(r), text, plan.stdout, plan.stderr, planJson.stdout]) {
      assert.ok(!out.includes(PASSWORD) && !out.includes(NEW_PASSWORD), 'a password was printed');
    }
    assert.match(plan.stdout, new RegExp(`past commit: ${n} entries`));
  });

  test('a torn write at the end of the newest segment is reported with its offset and not used', async () => {
    const dir = copyDir('torn');
    const walDir = path.join(dir, 'member', 'wal');
    const file = listWalSegments(walDir)[0].file;
    const end = endOfRecords(walDir);
    const bytes = fs.readFileSync(file);
    // A length word for a 1000-byte record whose first bytes reached the disk and whose next sector did not.
    bytes.writeBigUInt64LE(1000n, end);
    bytes.fill(0x5a, end + 8, end + 8 + 40);
    fs.writeFileSync(file, bytes);
    const r = JSON.parse(expectOk(await lifeboat('datadir', 'inspect', dir, '-w', 'json')));
    assert.equal(r.lastIndex, seen.raftIndex);
    assert.equal(r.damage.length, 1);
    assert.match(r.damage[0], new RegExp(`^torn tail not used: ${file} at byte offset ${end} `));
  });

  test("a later entry at a lower index replaces the log from there (an old leader's tail overwritten)", async () => {
    const dir = copyDir('overwrite');
    const walDir = path.join(dir, 'member', 'wal');
    const { file, size, records } = readRecords(walDir);
    const last = records.filter((x) => x.type === WAL_RECORD.entry).at(-1)!;
    const { index, term } = decodeEntry(last.data);
    // A new leader (term + 1) writes index - 1 again: entries index - 1 and index are replaced by one.
    const replaced = { ...last, data: encodeEntry(0, term + 1, index - 1, Buffer.alloc(0)) };
    writeSegment(file, size, [...records, replaced]);
    const r = JSON.parse(expectOk(await lifeboat('datadir', 'inspect', dir, '-w', 'json')));
    assert.equal(r.lastIndex, index - 1);
    assert.equal(r.lastTerm, term + 1);
    assert.equal(r.etcd.overwrittenEntries, 2);
    assert.deepEqual(r.damage, []);
  });
});
