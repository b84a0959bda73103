import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DataDirLockedError, MemberMismatchError, StorageError } from '../../src/storage/errors.js';
import type { FileSystem } from '../../src/storage/fileSystem.js';
import { RaftStorage, type OpenOptions } from '../../src/storage/raftStorage.js';
import { SimulatedDisk } from '../support/simulatedDisk.js';
import { entries, entry, IDENTITY, isGenuine, OTHER, tempDir } from './fixtures.js';

const DIR = '/data/m1';
const small = (fs: FileSystem): OpenOptions => ({ fs, identity: IDENTITY, segmentBytes: 4096, preallocBytes: 1024 });

function reopen(fs: FileSystem, opts: Partial<OpenOptions> = {}) {
  return RaftStorage.open(DIR, { ...small(fs), ...opts });
}

describe('raft storage', () => {
  it('starts empty and needs an identity to create a data dir', () => {
    const fs = new SimulatedDisk();
    assert.throws(() => RaftStorage.open(DIR, { fs }), /data dir \/data\/m1 holds no member/);
    const { storage, state, warnings, member } = reopen(fs);
    assert.deepEqual(state, {
      hardState: { term: 0, vote: 0n, commit: 0 },
      snapshot: { index: 0, term: 0, conf: { voters: [], learners: [] } },
      entries: [],
    });
    assert.deepEqual(warnings, []);
    assert.deepEqual(member, IDENTITY);
    assert.equal(storage.firstIndex(), 1);
    assert.equal(storage.lastIndex(), 0);
    storage.close();
    // Reopening without an identity is fine once one is recorded.
    const again = RaftStorage.open(DIR, { fs });
    assert.deepEqual(again.member, IDENTITY);
    again.storage.close();
  });

  it('appends, reads ranges and keeps the hard state across a reopen', () => {
    const fs = new SimulatedDisk();
    const { storage } = reopen(fs);
    storage.save({ entries: entries(1, 5, 1), hardState: { term: 1, vote: 7n, commit: 0 } }, { sync: true });
    storage.save({ entries: entries(6, 9, 2), hardState: { term: 2, vote: 7n, commit: 4 } }, { sync: true });
    storage.save({ hardState: { term: 2, vote: 7n, commit: 6 } }, { sync: true });
    assert.deepEqual(storage.entries(3, 7), [...entries(3, 5, 1), ...entries(6, 6, 2)]);
    assert.deepEqual(storage.entries(4, 4), []);
    assert.equal(storage.term(0), 0);
    assert.equal(storage.term(9), 2);
    assert.equal(storage.term(10), undefined);
    assert.throws(() => storage.entries(0, 3), RangeError);
    assert.throws(() => storage.entries(5, 11), RangeError);
    storage.close();

    const { storage: s2, state } = reopen(fs);
    assert.deepEqual(state.hardState, { term: 2, vote: 7n, commit: 6 });
    assert.deepEqual(state.entries, [...entries(1, 5, 1), ...entries(6, 9, 2)]);
    assert.deepEqual(s2.hardState(), state.hardState);
    s2.close();
  });

  it('replaces a conflicting suffix, in memory and on disk', () => {
    const fs = new SimulatedDisk();
    const { storage } = reopen(fs);
    storage.save({ entries: entries(1, 10, 1), hardState: { term: 1, vote: 0n, commit: 3 } }, { sync: true });
    storage.save({ entries: entries(5, 6, 2), hardState: { term: 2, vote: 0n, commit: 3 } }, { sync: true });
    assert.equal(storage.lastIndex(), 6);
    assert.deepEqual(storage.entries(1, 7), [...entries(1, 4, 1), ...entries(5, 6, 2)]);
    storage.close();
    const { state, storage: s2 } = reopen(fs);
    assert.deepEqual(state.entries, [...entries(1, 4, 1), ...entries(5, 6, 2)]);
    s2.close();
  });

  it('refuses batches that break Raft invariants, and stays usable', () => {
    const fs = new SimulatedDisk();
    const { storage } = reopen(fs);
    storage.save({ entries: entries(1, 5, 1), hardState: { term: 1, vote: 0n, commit: 3 } }, { sync: true });
    assert.throws(() => storage.save({ entries: entries(7, 8, 1) }, { sync: true }), /entries start at 7, outside \(0, 6\]/);
    assert.throws(() => storage.save({ entries: [entry(6, 1), entry(8, 1)] }, { sync: true }), /not contiguous/);
    assert.throws(() => storage.save({ entries: entries(3, 3, 2) }, { sync: true }), /entry 3 is committed/);
    assert.throws(() => storage.save({ hardState: { term: 0, vote: 0n, commit: 3 } }, { sync: true }), /term 0 is behind 1/);
    assert.throws(() => storage.save({ hardState: { term: 1, vote: 0n, commit: 2 } }, { sync: true }), /commit 2 is behind 3/);
    // Re-sending committed entries unchanged is harmless.
    storage.save({ entries: entries(3, 6, 1) }, { sync: true });
    assert.equal(storage.lastIndex(), 6);
    storage.close();
  });

  it('commits a batch with one write and one fsync', () => {
    const disk = new SimulatedDisk();
    const calls: string[] = [];
    const spy = new Proxy(disk, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          calls.push(String(prop));
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const { storage } = RaftStorage.open(DIR, { fs: spy, identity: IDENTITY, preallocBytes: 1 << 20 });
    storage.save({ entries: entries(1, 1, 1) }, { sync: true }); // creates the first segment
    calls.length = 0;
    storage.save({ entries: entries(2, 1001, 1), hardState: { term: 1, vote: 1n, commit: 1 } }, { sync: true });
    assert.deepEqual(calls, ['write', 'fsync']);
    calls.length = 0;
    storage.save({ entries: entries(1002, 1002, 1) }, { sync: false });
    assert.deepEqual(calls, ['write']);
    storage.close();
  });

  it('rolls segments and replays them all', () => {
    const fs = new SimulatedDisk();
    const { storage } = reopen(fs);
    for (let i = 0; i < 50; i++) storage.save({ entries: entries(i * 4 + 1, i * 4 + 4, 1 + (i >> 4)) }, { sync: i % 3 === 0 });
    storage.close();
    const segs = fs.list(`${DIR}/member/wal`);
    assert.ok(segs.length >= 8, `expected many segments, got ${segs.length}`);
    const { state, storage: s2 } = reopen(fs);
    assert.equal(state.entries.length, 200);
    assert.ok(state.entries.every((e, i) => e.index === i + 1 && isGenuine(e)));
    s2.close();
  });

  it('compacts after a local snapshot, dropping whole segments', () => {
    const fs = new SimulatedDisk();
    const { storage } = reopen(fs);
    for (let i = 0; i < 40; i++)
      storage.save({ entries: entries(i * 5 + 1, i * 5 + 5, 1), hardState: { term: 1, vote: 0n, commit: i * 5 + 5 } }, { sync: true });
    const before = fs.list(`${DIR}/member/wal`).length;
    assert.throws(() => storage.compact(100), /newest snapshot is at 0/);
    const conf = { voters: [1n, 2n, 3n], learners: [4n] };
    storage.saveSnapshot({ meta: { index: 150, term: 1, conf }, data: Buffer.from('kv state at 150') });
    storage.compact(120);
    assert.equal(storage.firstIndex(), 121);
    assert.throws(() => storage.entries(120, 125), RangeError);
    assert.equal(storage.entries(121, 201).length, 80);
    const after = fs.list(`${DIR}/member/wal`).length;
    assert.ok(after < before, `segments ${before} -> ${after}`);
    storage.close();

    const { state, storage: s2 } = reopen(fs);
    assert.deepEqual(state.snapshot, { index: 150, term: 1, conf });
    assert.deepEqual(state.entries, entries(151, 200, 1));
    assert.equal(Buffer.from(s2.latestSnapshot()!.data).toString(), 'kv state at 150');
    s2.close();
  });

  it('lets a snapshot from the leader replace the log, and keeps two snapshot files', () => {
    const fs = new SimulatedDisk();
    const { storage } = reopen(fs);
    storage.save({ entries: entries(1, 30, 1), hardState: { term: 1, vote: 0n, commit: 10 } }, { sync: true });
    const conf = { voters: [1n, 2n, 3n], learners: [] };
    for (const [i, at] of [100, 200, 300].entries()) {
      storage.save(
        {
          snapshot: { meta: { index: at, term: 3 + i, conf }, data: Buffer.from(`state ${at}`) },
          entries: entries(at + 1, at + 3, 3 + i),
          hardState: { term: 3 + i, vote: 0n, commit: at },
        },
        { sync: true },
      );
    }
    assert.equal(storage.firstIndex(), 301);
    assert.equal(storage.lastIndex(), 303);
    assert.deepEqual(fs.list(`${DIR}/member/snap`), ['0000000000000004-00000000000000c8.snap', '0000000000000005-000000000000012c.snap']);
    storage.compact(300);
    storage.close();
    const { state, storage: s2 } = reopen(fs);
    assert.deepEqual(state.snapshot, { index: 300, term: 5, conf });
    assert.deepEqual(state.entries, entries(301, 303, 5));
    assert.deepEqual(state.hardState, { term: 5, vote: 0n, commit: 300 });
    assert.equal(Buffer.from(s2.latestSnapshot()!.data).toString(), 'state 300');
    assert.equal(fs.list(`${DIR}/member/wal`).length, 1);
    s2.close();
  });

  it('rewrites the whole state for a forced new cluster', () => {
    const fs = new SimulatedDisk();
    const { storage } = reopen(fs);
    for (let i = 0; i < 10; i++) storage.save({ entries: entries(i * 5 + 1, i * 5 + 5, 2), hardState: { term: 2, vote: 2n, commit: i * 5 } }, { sync: true });
    storage.saveSnapshot({ meta: { index: 20, term: 2, conf: { voters: [1n, 2n, 3n], learners: [] } }, data: Buffer.from('kv@20') });
    const forced = {
      hardState: { term: 2, vote: 0n, commit: 50 },
      snapshot: { index: 20, term: 2, conf: { voters: [IDENTITY.memberId], learners: [] } },
      entries: entries(21, 50, 2),
    };
    storage.rewrite(forced);
    storage.setClusterId(42n);
    assert.equal(fs.list(`${DIR}/member/wal`).length, 1);
    storage.close();
    const { state, storage: s2, member } = reopen(fs, { identity: undefined, expectMemberId: IDENTITY.memberId });
    assert.deepEqual(state, forced);
    assert.equal(member.clusterId, 42n);
    assert.equal(Buffer.from(s2.latestSnapshot()!.data).toString(), 'kv@20');
    s2.close();
  });

  it('refuses a data dir of another member or cluster', () => {
    const fs = new SimulatedDisk();
    reopen(fs).storage.close();
    assert.throws(
      () => RaftStorage.open(DIR, { fs, expectMemberId: OTHER.memberId }),
      (err: unknown) => err instanceof MemberMismatchError && err.message === 'data dir /data/m1 belongs to member 8e9e05c52164694d, not 91bc3c398fb3c146',
    );
    assert.throws(() => RaftStorage.open(DIR, { fs, identity: { ...IDENTITY, clusterId: 5n } }), /belongs to cluster cdf818194e3a8c32, not 5$/);
  });

  it('locks the data dir against a second opener and breaks a stale lock', () => {
    const t = tempDir('lock');
    try {
      const { storage } = RaftStorage.open(t.dir, { identity: IDENTITY });
      assert.throws(
        () => RaftStorage.open(t.dir, { identity: IDENTITY }),
        (err: unknown) =>
          err instanceof DataDirLockedError && err.message === `data dir ${t.dir} is locked by pid ${process.pid} (a member is running); stop it first`,
      );
      storage.close();
      const fs = new SimulatedDisk();
      reopen(fs); // left open: the "process" holding it dies below
      fs.crash();
      const lock = `${DIR}/member/lock`;
      if (fs.exists(lock)) fs.unlink(lock);
      fs.createExclusive(lock, Buffer.from('999999 sim-0\n'));
      const { storage: s2, warnings } = reopen(fs);
      assert.deepEqual(warnings, [{ msg: 'removed stale data dir lock', file: `${DIR}/member/lock`, pid: 999999 }]);
      s2.close();
    } finally {
      t.cleanup();
    }
  });

  it('sync(): a write made durable off the event loop survives a power cut; nothing writes or closes meanwhile', async () => {
    const disk = new SimulatedDisk();
    const { storage } = reopen(disk);
    storage.save({ entries: entries(1, 3, 1), hardState: { term: 1, vote: 1n, commit: 0 } }, { sync: false });
    const pending = storage.sync();
    assert.throws(() => storage.save({ entries: entries(4, 4, 1) }, { sync: false }), /write while an fsync is in flight/);
    assert.throws(() => storage.close(), /closed while an fsync is in flight/);
    await pending;
    storage.save({ entries: entries(4, 4, 1) }, { sync: false }); // written, never synced
    disk.crash();
    const { state, storage: again } = reopen(disk);
    assert.deepEqual(state.entries, entries(1, 3, 1));
    assert.deepEqual(state.hardState, { term: 1, vote: 1n, commit: 0 });
    again.close();
  });

  it('sync(): a failed fsync poisons the storage (never retried: the page cache may have dropped the data)', async () => {
    const disk = new SimulatedDisk();
    const failing = Object.assign(Object.create(disk) as SimulatedDisk, {
      fsyncAsync: () => Promise.reject(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })),
    });
    const { storage } = reopen(failing);
    storage.save({ entries: entries(1, 1, 1) }, { sync: false });
    await assert.rejects(storage.sync(), /fsync failed: EIO/);
    assert.throws(() => storage.save({ entries: entries(2, 2, 1) }, { sync: false }), /failed earlier and must be reopened/);
  });

  it('refuses use after close', () => {
    const fs = new SimulatedDisk();
    const { storage } = reopen(fs);
    storage.close();
    assert.throws(() => storage.save({ entries: entries(1, 1, 1) }, { sync: true }), StorageError);
  });

  it('works on the real disk', () => {
    const t = tempDir('real');
    try {
      const { storage } = RaftStorage.open(t.dir, { identity: IDENTITY, segmentBytes: 16384, preallocBytes: 4096 });
      for (let i = 0; i < 20; i++) storage.save({ entries: entries(i * 10 + 1, i * 10 + 10, 1) }, { sync: true });
      storage.close();
      const { state, storage: s2, warnings } = RaftStorage.open(t.dir, { expectMemberId: IDENTITY.memberId });
      assert.deepEqual(warnings, []);
      assert.deepEqual(state.entries, entries(1, 200, 1));
      s2.close();
    } finally {
      t.cleanup();
    }
  });
});
