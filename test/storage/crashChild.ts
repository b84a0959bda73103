// Child process of processCrash.test.ts (not a test itself: without arguments it exits).
//
//   node crashChild.js write <data-dir> <seed>   writes until killed, reporting each operation
//   node crashChild.js hold <data-dir>           opens the data dir and waits to be killed
//
// Report lines on stdout (written synchronously, so a line the parent reads was
// written before the child went on):
//   ready <pid>
//   B <snapIndex|-> <snapTerm|-> <first> <last> <term> <hsTerm> <hsVote> <hsCommit>   a save() is starting
//   S <index> <term> <compactTo>                                                      saveSnapshot() + compact() starting
//   A                                                                                 it returned (fsynced)

import type { Entry, HardState } from '../../src/raft/types.js';
import { RaftStorage } from '../../src/storage/raftStorage.js';
import { CHILD_STORAGE_OPTS, entries, IDENTITY, report, seeded } from './fixtures.js';

const CONF = { voters: [1n, 2n, 3n], learners: [] };
/** A child never outlives this, whatever happens to its parent. */
const MAX_MS = 30_000;

function writeUntilKilled(dir: string, seed: number): void {
  const rnd = seeded(seed);
  const { storage } = RaftStorage.open(dir, { identity: IDENTITY, ...CHILD_STORAGE_OPTS });
  report(`ready ${process.pid}`);
  const start = Date.now();
  const save = (snap: { index: number; term: number } | undefined, ents: Entry[], term: number, hs: HardState) => {
    const first = ents[0]?.index ?? 0;
    report(`B ${snap ? `${snap.index} ${snap.term}` : '- -'} ${first} ${first + ents.length - 1} ${term} ${hs.term} ${hs.vote} ${hs.commit}`);
    const snapshot = snap && { meta: { ...snap, conf: CONF }, data: Buffer.from(`state at ${snap.index}`) };
    storage.save({ snapshot, entries: ents, hardState: hs }, { sync: true });
    report('A');
  };
  while (Date.now() - start < MAX_MS) {
    const r = rnd();
    const hs = storage.hardState();
    const last = storage.lastIndex();
    if (r < 0.75) {
      const n = 1 + Math.floor(rnd() * 16);
      const term = Math.max(hs.term, 1);
      save(undefined, entries(last + 1, last + n, term), term, { ...hs, term, commit: Math.min(last + n, hs.commit + Math.floor(rnd() * 12)) });
    } else if (r < 0.85) {
      const lo = Math.max(hs.commit, storage.firstIndex() - 1) + 1;
      const from = lo + Math.floor(rnd() * (last - lo + 2));
      const term = hs.term + 1;
      save(undefined, entries(from, from + Math.floor(rnd() * 6), term), term, { term, vote: 0n, commit: hs.commit });
    } else if (r < 0.93) {
      const snap = storage.snapshotMeta().index;
      if (hs.commit <= snap) continue;
      const at = snap + 1 + Math.floor(rnd() * (hs.commit - snap));
      const term = storage.term(at)!;
      const to = Math.max(0, at - Math.floor(rnd() * 20));
      report(`S ${at} ${term} ${to}`);
      storage.saveSnapshot({ meta: { index: at, term, conf: CONF }, data: Buffer.from(`state at ${at}`) });
      storage.compact(to);
      report('A');
    } else if (r < 0.96) {
      const at = last + 1 + Math.floor(rnd() * 30);
      const term = hs.term + 1;
      save({ index: at, term }, entries(at + 1, at + Math.floor(rnd() * 4), term), term, { term, vote: 0n, commit: at });
    } else {
      save(undefined, [], hs.term, { term: hs.term + 1, vote: BigInt(1 + Math.floor(rnd() * 3)), commit: hs.commit });
    }
  }
  storage.close();
}

function holdUntilKilled(dir: string): void {
  RaftStorage.open(dir, { identity: IDENTITY, ...CHILD_STORAGE_OPTS });
  report(`ready ${process.pid}`);
  setTimeout(() => process.exit(0), MAX_MS);
}

const [mode, dir, seed] = process.argv.slice(2);
if (mode === 'write' && dir) writeUntilKilled(dir, Number(seed ?? 1));
else if (mode === 'hold' && dir) holdUntilKilled(dir);
