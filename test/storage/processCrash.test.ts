// Crash tests with real processes: a child (crashChild.ts) writes and fsyncs
// batches and reports each operation before it starts and after it returns; the
// parent kills it with SIGKILL at a random moment (during recovery, mid-save,
// mid-roll, mid-snapshot...), reopens the same data dir and checks that the log is
// one the writes could have left, holding everything whose fsync returned.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { PersistedState } from '../../src/raft/types.js';
import { DataDirLockedError } from '../../src/storage/errors.js';
import { lockPath } from '../../src/storage/layout.js';
import { RaftStorage } from '../../src/storage/raftStorage.js';
import { CHILD_STORAGE_OPTS, entries, IDENTITY, seeded, tempDir } from './fixtures.js';
import { checkRecovered, LogModel } from './logModel.js';

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'crashChild.js');
const LINEAGES = 2;
// `LIFEBOAT_KILLS=1000 node --test dist/test/storage/processCrash.test.js` for a longer hunt.
const KILLS_PER_LINEAGE = Math.ceil(Number(process.env.LIFEBOAT_KILLS ?? 120) / LINEAGES);
/** Stop killing once this much time went by, whatever the count (slow machines). */
const TIME_BUDGET_MS = process.env.LIFEBOAT_KILLS ? Infinity : 50_000;

interface Lineage {
  dir: string;
  /** What the data dir holds now (as of the last reopen). */
  state: PersistedState;
  rnd: () => number;
  snapshots: Set<string>;
  durableSnapshot: number;
  kills: number;
  midOperation: number;
  tornCuts: number;
}

function openDir(dir: string) {
  return RaftStorage.open(dir, { identity: IDENTITY, ...CHILD_STORAGE_OPTS });
}

function closedAfterOpen(dir: string): PersistedState {
  const { storage, state } = openDir(dir);
  storage.close();
  return state;
}

/** One child: spawn, let it write, SIGKILL it, then verify the data dir. */
async function killOnce(l: Lineage, round: number): Promise<void> {
  let model = LogModel.from(l.state);
  let inflight: LogModel[] = [];
  let pendingSnapshot: { index: number; to: number } | undefined;

  const child = spawn(process.execPath, [CHILD, 'write', l.dir, String(round * 7919 + l.snapshots.size)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  const kill = (afterMs: number) => setTimeout(() => child.kill('SIGKILL'), afterMs);
  // Mostly kill while it writes; sometimes while it is still starting or recovering.
  const early = l.rnd() < 0.15;
  const delay = l.rnd();
  if (early) kill(20 + delay * 150);

  const lines = readline.createInterface({ input: child.stdout });
  lines.on('line', (line) => {
    const f = line.split(' ');
    if (f[0] === 'ready') {
      if (!early) kill(delay * 40);
    } else if (f[0] === 'B' && f.length === 9) {
      const [, si, st, first, last, term, hsTerm, hsVote, hsCommit] = f as [string, string, string, string, string, string, string, string, string];
      const snapshot = si === '-' ? undefined : { index: Number(si), term: Number(st) };
      if (snapshot) l.snapshots.add(`${snapshot.index}/${snapshot.term}`);
      const ents = Number(first) > 0 ? entries(Number(first), Number(last), Number(term)) : [];
      const hardState = { term: Number(hsTerm), vote: BigInt(hsVote), commit: Number(hsCommit) };
      const same = hardState.term === model.hs.term && hardState.vote === model.hs.vote && hardState.commit === model.hs.commit;
      inflight = model.batchStates({ snapshot, entries: ents, hardState: same ? undefined : hardState });
      if (snapshot) pendingSnapshot = { index: snapshot.index, to: -1 };
    } else if (f[0] === 'S' && f.length === 4) {
      l.snapshots.add(`${f[1]}/${f[2]}`);
      pendingSnapshot = { index: Number(f[1]), to: Number(f[3]) };
    } else if (f[0] === 'A') {
      if (inflight.length > 0) model = inflight.at(-1)!;
      if (pendingSnapshot) {
        l.durableSnapshot = pendingSnapshot.index;
        if (pendingSnapshot.to >= 0) model.compact(pendingSnapshot.to);
      }
      inflight = [];
      pendingSnapshot = undefined;
    }
  });
  const { signal } = await closed;
  assert.equal(signal, 'SIGKILL', `child ended by itself: ${stderr}`);
  l.kills++;
  if (inflight.length > 0 || pendingSnapshot) l.midOperation++;

  const after = openDir(l.dir);
  after.storage.close();
  const where = `${l.dir}, kill ${l.kills}`;
  l.tornCuts += after.warnings.filter((w) => w.msg.startsWith('cut off a torn record')).length;
  const { snapshot } = after.state;
  assert.ok(l.snapshots.has(`${snapshot.index}/${snapshot.term}`) || snapshot.index === 0, `${where}: snapshot ${snapshot.index} was never written`);
  assert.ok(snapshot.index >= l.durableSnapshot, `${where}: snapshot ${l.durableSnapshot} was saved, ${snapshot.index} came back`);
  const failure = checkRecovered(after.state, [model, ...inflight]);
  assert.equal(failure, undefined, `${where}: ${failure}`);
  l.durableSnapshot = snapshot.index;
  l.state = after.state;
}

describe('raft storage in a process killed with SIGKILL', () => {
  it(`keeps every fsynced record through ${LINEAGES * KILLS_PER_LINEAGE} kills`, { timeout: process.env.LIFEBOAT_KILLS ? undefined : 120_000 }, async (t) => {
    const dirs = Array.from({ length: LINEAGES }, (_, i) => tempDir(`kill${i}`));
    try {
      const started = Date.now();
      const lineages: Lineage[] = dirs.map((d, i) => ({
        dir: d.dir,
        state: closedAfterOpen(d.dir),
        rnd: seeded(1000 + i),
        snapshots: new Set(),
        durableSnapshot: 0,
        kills: 0,
        midOperation: 0,
        tornCuts: 0,
      }));
      await Promise.all(
        lineages.map(async (l) => {
          for (let round = 0; round < KILLS_PER_LINEAGE && Date.now() - started < TIME_BUDGET_MS; round++) await killOnce(l, round);
        }),
      );
      const kills = lineages.reduce((n, l) => n + l.kills, 0);
      const mid = lineages.reduce((n, l) => n + l.midOperation, 0);
      const torn = lineages.reduce((n, l) => n + l.tornCuts, 0);
      t.diagnostic(`${kills} kills, ${mid} in the middle of an operation, ${torn} torn tails cut, ${Date.now() - started} ms`);
      assert.ok(kills >= 100, `only ${kills} kills within the time budget`);
      assert.ok(mid >= kills / 4, `only ${mid} of ${kills} kills landed in the middle of an operation`);
    } finally {
      for (const d of dirs) d.cleanup();
    }
  });

  it('gives a second opener the lock error with the holder pid, and breaks the lock once the holder is dead', async () => {
    const d = tempDir('lock');
    try {
      openDir(d.dir).storage.close();
      const child = spawn(process.execPath, [CHILD, 'hold', d.dir], { stdio: ['ignore', 'pipe', 'inherit'] });
      const closed = new Promise((resolve) => child.on('close', resolve));
      const lines = readline.createInterface({ input: child.stdout });
      const [ready] = await new Promise<string[]>((resolve) => lines.once('line', (line) => resolve([line])));
      assert.equal(ready, `ready ${child.pid}`);
      assert.throws(
        () => openDir(d.dir),
        (err: unknown) =>
          err instanceof DataDirLockedError &&
          err.pid === child.pid &&
          err.message === `data dir ${d.dir} is locked by pid ${child.pid} (a member is running); stop it first`,
      );
      child.kill('SIGKILL');
      await closed;
      const { storage, warnings } = openDir(d.dir);
      assert.deepEqual(warnings, [{ msg: 'removed stale data dir lock', file: lockPath(d.dir), pid: child.pid! }]);
      storage.close();
    } finally {
      d.cleanup();
    }
  });
});
