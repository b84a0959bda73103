// Damaged data dirs on the real disk: each kind of damage gets its documented
// outcome — a torn tail of the newest segment is cut with a warning; anything else
// is a one-line StorageCorruptError naming the file, the offset and the recovery command.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { StorageCorruptError } from '../../src/storage/errors.js';
import { metaPath, snapDir, walDir } from '../../src/storage/layout.js';
import { RaftStorage } from '../../src/storage/raftStorage.js';
import { scanSegment, type ScannedRecord } from '../../src/storage/segment.js';
import { entries, IDENTITY, OTHER, tempDir } from './fixtures.js';

const OPTS = { segmentBytes: 8192, preallocBytes: 4096 };

let t: ReturnType<typeof tempDir>;
beforeEach(() => {
  t = tempDir('damage');
});
afterEach(() => t.cleanup());

/** A data dir with 300 entries over several segments and a snapshot at 100. */
function populate(dir: string, identity = IDENTITY): void {
  const { storage } = RaftStorage.open(dir, { identity, ...OPTS });
  for (let i = 0; i < 60; i++) storage.save({ entries: entries(i * 5 + 1, i * 5 + 5, 1), hardState: { term: 1, vote: 1n, commit: i * 5 } }, { sync: true });
  storage.saveSnapshot({ meta: { index: 100, term: 1, conf: { voters: [1n], learners: [] } }, data: Buffer.from('kv state') });
  storage.close();
}

function segments(dir: string): string[] {
  return fs
    .readdirSync(walDir(dir))
    .filter((n) => n.endsWith('.wal'))
    .sort()
    .map((n) => path.join(walDir(dir), n));
}

function records(file: string): ScannedRecord[] {
  const seq = parseInt(path.basename(file).slice(0, 16), 16);
  return scanSegment(fs.readFileSync(file), { dataDir: '', file, memberId: IDENTITY.memberId, seq }).records;
}

function edit(file: string, f: (b: Buffer) => Buffer): void {
  fs.writeFileSync(file, f(fs.readFileSync(file)));
}

function flip(file: string, offset: number): void {
  edit(file, (b) => {
    b[offset] ^= 0x40;
    return b;
  });
}

function open(dir: string) {
  return RaftStorage.open(dir, { expectMemberId: IDENTITY.memberId, ...OPTS });
}

/** Asserts that opening fails with a one-line corruption error at `file` and `offset`. */
function assertCorrupt(dir: string, file: string, offset: number, detail: RegExp): void {
  assert.throws(
    () => open(dir),
    (err: unknown) => {
      assert.ok(err instanceof StorageCorruptError, `not a StorageCorruptError: ${String(err)}`);
      assert.equal(err.file, file);
      assert.equal(err.offset, offset);
      assert.match(err.detail, detail);
      assert.ok(!err.message.includes('\n'), 'message must be one line');
      assert.ok(err.message.startsWith(`data dir ${dir} is damaged: ${file} at offset ${offset}: `), err.message);
      assert.ok(err.message.endsWith(`lifeboat recover plan --from-data-dir ${dir}`), err.message);
      return true;
    },
  );
  // The failed open released the lock: the error stays the same on a second try.
  assert.throws(() => open(dir), StorageCorruptError);
}

describe('damaged data dirs', () => {
  it('stops at a flipped byte in the middle of the newest segment', () => {
    populate(t.dir);
    const newest = segments(t.dir).at(-1)!;
    const recs = records(newest);
    assert.ok(recs.length > 4);
    const victim = recs[2];
    flip(newest, victim.offset + 12);
    assertCorrupt(t.dir, newest, victim.offset, /record checksum mismatch, and intact records follow at offset \d+/);
  });

  it('stops at a flipped byte in an older segment', () => {
    populate(t.dir);
    const older = segments(t.dir)[1];
    const victim = records(older).at(-2)!;
    flip(older, victim.offset + 20);
    assertCorrupt(t.dir, older, victim.offset, /record checksum mismatch/);
  });

  it('cuts a torn last record of the newest segment with a warning', () => {
    populate(t.dir);
    const newest = segments(t.dir).at(-1)!;
    const last = records(newest).at(-1)!; // the hard state of the last batch
    const entry = records(newest).at(-2)!; // entry 300
    edit(newest, (b) => b.subarray(0, entry.offset + 30)); // cut inside entry 300
    // Read-only inspection leaves the file alone but gives the same state.
    const before = fs.readFileSync(newest);
    const inspected = RaftStorage.open(t.dir, { readOnly: true });
    assert.equal(inspected.warnings[0].msg, 'left out a torn record at the end of the raft log (it was never acknowledged)');
    assert.equal(inspected.state.entries.at(-1)!.index, 299);
    assert.throws(() => inspected.storage.save({ entries: entries(300, 300, 2) }, { sync: true }), /is open read-only/);
    inspected.storage.close();
    assert.ok(fs.readFileSync(newest).equals(before));

    const { storage, state, warnings } = open(t.dir);
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0].msg, 'cut off a torn record at the end of the raft log (it was never acknowledged)');
    assert.equal(warnings[0].file, newest);
    assert.equal(warnings[0].offset, entry.offset);
    assert.equal(state.entries.at(-1)!.index, 299);
    assert.ok(last.offset > entry.offset);
    // Appends continue where the torn record was, and a reopen is clean.
    storage.save({ entries: entries(300, 310, 2) }, { sync: true });
    storage.close();
    const again = open(t.dir);
    assert.deepEqual(again.warnings, []);
    assert.equal(again.state.entries.at(-1)!.index, 310);
    again.storage.close();
  });

  it('treats a zero-filled tail of the newest segment as torn', () => {
    populate(t.dir);
    const newest = segments(t.dir).at(-1)!;
    const victim = records(newest).at(-4)!;
    edit(newest, (b) => {
      b.fill(0, victim.offset + 9);
      return b;
    });
    const { storage, state, warnings } = open(t.dir);
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0].offset, victim.offset);
    assert.ok(state.entries.at(-1)!.index < 300);
    storage.close();
  });

  it('stops at zeros in the middle of the newest segment', () => {
    populate(t.dir);
    const newest = segments(t.dir).at(-1)!;
    const recs = records(newest);
    const victim = recs[1];
    edit(newest, (b) => {
      b.fill(0, victim.offset, recs[3].offset);
      return b;
    });
    assertCorrupt(t.dir, newest, victim.offset, /intact records follow at offset/);
  });

  it('stops at a truncated older segment', () => {
    populate(t.dir);
    const older = segments(t.dir)[1];
    const seal = records(older).at(-1)!;
    edit(older, (b) => b.subarray(0, seal.offset));
    assertCorrupt(t.dir, older, seal.offset, /ends without its seal record/);
  });

  it('stops at a segment of another member', () => {
    populate(t.dir);
    const other = tempDir('other');
    try {
      populate(other.dir, OTHER);
      // Copied over one of ours, under our file name.
      const dest = segments(t.dir)[0];
      fs.copyFileSync(segments(other.dir)[0], dest);
      assertCorrupt(t.dir, dest, 8, /segment belongs to member 91bc3c398fb3c146, not 8e9e05c52164694d \(a file from another data dir\?\)/);
    } finally {
      other.cleanup();
    }
  });

  it('stops when a segment is missing', () => {
    populate(t.dir);
    const all = segments(t.dir);
    fs.unlinkSync(all[2]);
    assertCorrupt(t.dir, all[3], 24, /segment sequence jumps from \d+ to \d+: a segment is missing/);
  });

  it('stops at a damaged segment header', () => {
    populate(t.dir);
    const newest = segments(t.dir).at(-1)!;
    flip(newest, 40);
    assertCorrupt(t.dir, newest, 0, /segment header checksum mismatch/);
  });

  it('stops at a damaged snapshot file', () => {
    populate(t.dir);
    const snap = path.join(snapDir(t.dir), fs.readdirSync(snapDir(t.dir))[0]);
    const size = fs.statSync(snap).size;
    flip(snap, size - 6); // inside the data
    const dataAt = size - 4 - 'kv state'.length;
    assertCorrupt(t.dir, snap, dataAt, /snapshot data checksum mismatch \(8 bytes\)/);
    edit(snap, (b) => b.subarray(0, size - 3));
    assertCorrupt(t.dir, snap, size - 3, /file is \d+ bytes, its header says \d+ \(truncated\?\)/);
  });

  it('stops at a damaged member meta file', () => {
    populate(t.dir);
    flip(metaPath(t.dir), 10);
    assertCorrupt(t.dir, metaPath(t.dir), 0, /member meta checksum mismatch/);
    fs.unlinkSync(metaPath(t.dir));
    assertCorrupt(t.dir, metaPath(t.dir), 0, /member meta file is missing but raft log or snapshot files exist/);
  });
});
