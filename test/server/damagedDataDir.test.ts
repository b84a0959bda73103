// A damaged or foreign file in a data dir stops `lifeboat server` at start with
// exit 1 and one line for the operator naming the file and the recovery command,
// never a stack trace, never silent use. Each case damages a copy of a stopped
// member's data dir and starts the member on it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KvStore } from '../../src/kv/kvStore.js';
import { kvPath, walDir } from '../../src/storage/layout.js';
import { NodeFileSystem } from '../../src/storage/fileSystem.js';
import { readMemberMeta } from '../../src/storage/memberMeta.js';
import { scanSegment } from '../../src/storage/segment.js';
import { LifeboatCluster, etcdctl, lifeboat, type MemberProc } from '../support/lifeboatCluster.js';

const RECOVERY = 'lifeboat recover plan --from-data-dir';

describe('lifeboat server on a damaged or foreign data dir', () => {
  let c: LifeboatCluster;
  let m1: MemberProc;
  let m2: MemberProc;
  let n = 0;
  before(async () => {
    c = await LifeboatCluster.start('damaged', 2);
    [m1, m2] = c.members as [MemberProc, MemberProc];
    for (let i = 0; i < 20; i++) assert.equal((await etcdctl(c.endpoints(), 'put', `k${i}`, 'v'.repeat(200))).code, 0);
    // A clean stop checkpoints the WAL into kv.db, so damage to kv.db is damage to the data.
    for (const m of c.members) assert.equal(await c.kill(m, 'SIGTERM'), 0);
    assert.ok(!fs.existsSync(`${kvPath(m1.dataDir)}-wal`), 'kv.db still has a WAL after a clean stop');
  });
  after(async () => c?.stopAll());

  /** A copy of m1's data dir, damaged by `damage`. */
  function damagedCopy(damage: (dataDir: string) => void): string {
    const dir = path.join(c.dir, `copy${++n}`);
    fs.cpSync(m1.dataDir, dir, { recursive: true });
    damage(dir);
    return dir;
  }

  /** Starts m1 on dataDir; it must refuse with exit 1 and one operator line matching `want`. */
  async function assertRefused(dataDir: string, want: RegExp): Promise<string> {
    const r = await lifeboat(
      'server',
      '--name',
      m1.name,
      '--data-dir',
      dataDir,
      '--listen-peer-urls',
      m1.peerUrl,
      '--initial-advertise-peer-urls',
      m1.peerUrl,
      '--listen-client-urls',
      m1.clientUrl,
      '--advertise-client-urls',
      m1.clientUrl,
      '--initial-cluster',
      c.initialCluster(),
    );
    assert.equal(r.code, 1, r.stderr);
    // Besides the structured JSON log lines, exactly one line for the operator.
    const human = r.stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('{'));
    assert.equal(human.length, 1, `expected one line:\n${r.stderr}`);
    assert.doesNotMatch(r.stderr, /^\s+at /m, 'a stack trace');
    assert.match(human[0], want);
    return human[0];
  }

  test('kv.db with flipped bytes', async () => {
    const dir = damagedCopy((d) => {
      const file = kvPath(d);
      const buf = fs.readFileSync(file);
      // The type byte of every b-tree page after the first.
      for (let page = 4096; page < buf.length; page += 4096) buf[page] ^= 0x5a;
      fs.writeFileSync(file, buf);
    });
    const line = await assertRefused(dir, /is damaged: .*kv\.db: /);
    assert.ok(line.includes(kvPath(dir)) && line.endsWith(`${RECOVERY} ${dir}`), line);
  });

  test('truncated kv.db', async () => {
    const dir = damagedCopy((d) => fs.truncateSync(kvPath(d), Math.floor(fs.statSync(kvPath(d)).size / 2) + 100));
    const line = await assertRefused(dir, /is damaged: .*kv\.db: /);
    assert.ok(line.includes(kvPath(dir)) && line.endsWith(`${RECOVERY} ${dir}`), line);
  });

  test("kv.db copied from another member's data dir", async () => {
    const dir = damagedCopy((d) => fs.copyFileSync(kvPath(m2.dataDir), kvPath(d)));
    const line = await assertRefused(dir, /kv\.db belongs to member [0-9a-f]{16}, but this data dir is member [0-9a-f]{16} of cluster [0-9a-f]{16}/);
    assert.ok(line.includes(kvPath(dir)) && line.includes(`${RECOVERY} ${dir}`), line);
  });

  test('kv.db of another cluster', async () => {
    const dir = damagedCopy((d) => {
      const kv = KvStore.open(kvPath(d));
      kv.writeLocal((w) => {
        w.setClusterId(0x1234n);
        w.deleteMeta('member_id');
      });
      kv.close();
    });
    await assertRefused(dir, /kv\.db belongs to cluster 1234, but this data dir is member /);
  });

  test('raft log segment with a flipped byte in a record that has records after it', async () => {
    let where = '';
    const dir = damagedCopy((d) => {
      const file = path.join(
        walDir(d),
        fs
          .readdirSync(walDir(d))
          .filter((f) => f.endsWith('.wal'))
          .sort()[0],
      );
      const buf = fs.readFileSync(file);
      const { memberId } = readMemberMeta(new NodeFileSystem(), d)!;
      const { records } = scanSegment(buf, { dataDir: d, file, memberId, seq: 1 });
      assert.ok(records.length > 3, `only ${records.length} records`);
      const victim = records[1].offset;
      buf[victim + 20] ^= 0x40;
      fs.writeFileSync(file, buf);
      where = `${file} at offset ${victim}`;
    });
    const line = await assertRefused(dir, /^.*data dir .* is damaged: /);
    assert.ok(line.includes(where) && line.endsWith(`${RECOVERY} ${dir}`), `${line}\nexpected ${where}`);
  });
});
