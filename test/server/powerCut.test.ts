// A member must start after a power cut. A hard state that only moves the commit
// index is written without an fsync, while kv.db makes itself durable on its own
// schedule: after a power cut kv.db can be ahead of the log's commit index. Here a
// real member is stopped, the last record of its log (that hard state) is cut off,
// torn in its middle or removed whole, and the member must start, keep running and
// serve every write it acknowledged.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EtcdClient } from '../../src/client/etcdClient.js';
import { KvStore } from '../../src/kv/kvStore.js';
import { kvPath, parseSegmentName, walDir } from '../../src/storage/layout.js';
import { NodeFileSystem } from '../../src/storage/fileSystem.js';
import { RecordType } from '../../src/storage/logRecord.js';
import { readMemberMeta } from '../../src/storage/memberMeta.js';
import { RaftStorage } from '../../src/storage/raftStorage.js';
import { scanSegment } from '../../src/storage/segment.js';
import { LifeboatCluster, waitFor, type MemberProc } from '../support/lifeboatCluster.js';

const KEYS = 2100;

async function putAll(endpoint: string): Promise<void> {
  const client = new EtcdClient({ endpoints: endpoint, commandTimeoutMs: 10_000 });
  try {
    let next = 0;
    const worker = async () => {
      while (next < KEYS) {
        const i = next++;
        await client.put(`cut/${String(i).padStart(5, '0')}`, `v${i}`);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
  } finally {
    client.close();
  }
}

/** The newest segment of the log and its last record. */
function lastRecord(dataDir: string): { file: string; offset: number; next: number } {
  const dir = walDir(dataDir);
  const [name] = fs
    .readdirSync(dir)
    .filter((n) => parseSegmentName(n))
    .sort()
    .reverse();
  assert.ok(name, `no segment in ${dir}`);
  const file = path.join(dir, name);
  const buf = fs.readFileSync(file);
  const { memberId } = readMemberMeta(new NodeFileSystem(), dataDir)!;
  const scan = scanSegment(buf, { dataDir, file, memberId, seq: parseSegmentName(name)!.seq });
  assert.equal(scan.end.kind, 'clean', `segment ${file} ends ${scan.end.kind}`);
  const last = scan.records.at(-1)!;
  assert.equal(last.record.type, RecordType.HardState, 'the log of a cleanly stopped member ends with the hard state that moved the commit');
  return { file, offset: last.offset, next: scan.end.offset };
}

/** The commit index the log records now. */
function logCommit(dataDir: string): number {
  const { storage, state } = RaftStorage.open(dataDir, { readOnly: true });
  storage.close();
  return state.hardState.commit;
}

function kvApplied(dataDir: string): number {
  const kv = KvStore.open(kvPath(dataDir), { readonly: true });
  try {
    return kv.appliedIndex();
  } finally {
    kv.close();
  }
}

async function count(endpoint: string): Promise<number> {
  const client = new EtcdClient({ endpoints: endpoint, commandTimeoutMs: 10_000 });
  try {
    const r = await client.range('cut/', { rangeEnd: 'cut0', countOnly: true });
    return Number(r.count);
  } finally {
    client.close();
  }
}

describe('a member whose log lost the hard state that moved its commit index (a power cut)', () => {
  let c: LifeboatCluster;
  let m: MemberProc;
  let pristine: string;
  before(async () => {
    c = await LifeboatCluster.start('powercut', 1, ['--snapshot-count', '40']);
    m = c.members[0]!;
    await putAll(m.client);
    assert.equal(await c.kill(m, 'SIGTERM'), 0);
    pristine = path.join(c.dir, 'pristine');
    fs.cpSync(m.dataDir, pristine, { recursive: true });
  });
  after(async () => c?.stopAll());

  for (const cut of ['torn in its middle', 'removed whole'] as const) {
    test(`starts, stays up and serves every acknowledged write when that record is ${cut}`, async () => {
      fs.rmSync(m.dataDir, { recursive: true, force: true });
      fs.cpSync(pristine, m.dataDir, { recursive: true });
      const rec = lastRecord(m.dataDir);
      const from = cut === 'removed whole' ? rec.offset : rec.offset + Math.floor((rec.next - rec.offset) / 2);
      const fd = fs.openSync(rec.file, 'r+');
      fs.writeSync(fd, Buffer.alloc(rec.next - from), 0, rec.next - from, from);
      fs.closeSync(fd);
      // The state of the bug: kv.db holds entries beyond the commit index the log now records.
      const applied = kvApplied(m.dataDir);
      assert.ok(applied > logCommit(m.dataDir), `kv.db applied ${applied}, the log's commit is ${logCommit(m.dataDir)}`);

      c.spawn(m, ['--snapshot-count', '40']);
      await c.waitForLeader([m]);
      if (cut === 'torn in its middle')
        assert.ok(
          m.log.some((l) => l.includes('cut off a torn record')),
          m.log.join('\n'),
        );
      assert.equal(await count(m.client), KEYS);
      // It went down 170 ms after becoming leader: it must still be up well after.
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(m.proc!.exitCode, null, `the member exited: ${m.log.slice(-3).join('\n')}`);
      const client = new EtcdClient({ endpoints: m.client, commandTimeoutMs: 10_000 });
      try {
        await client.put('cut/after', 'yes');
      } finally {
        client.close();
      }
      await waitFor('the new write', async () => (await count(m.client)) === KEYS + 1, 10_000);
      assert.equal(await c.kill(m, 'SIGTERM'), 0);
    });
  }
});
