// Storage on the simulated disk, crashed at hundreds of points (inside saves,
// segment rolls, snapshot writes, compactions and recovery itself), sometimes
// letting a random prefix of unsynced writes through and tearing the next one.
// After every crash the recovered state must be one the writes could have left,
// and everything whose fsync returned must be there.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HardState } from '../../src/raft/types.js';
import { RaftStorage, type OpenResult } from '../../src/storage/raftStorage.js';
import { SimulatedCrash, SimulatedDisk, type CrashOptions } from '../support/simulatedDisk.js';
import type { StorageWarning } from '../../src/storage/warning.js';
import { entries, entry, IDENTITY, seeded } from './fixtures.js';
import { checkRecovered, LogModel } from './logModel.js';

const DIR = '/srv/m1';
const CONF = { voters: [1n, 2n, 3n], learners: [] };

interface RunStats {
  crashes: number;
  tornCuts: number;
  saves: number;
}

function openOn(fs: SimulatedDisk): OpenResult {
  return RaftStorage.open(DIR, { fs, identity: IDENTITY, segmentBytes: 2048, preallocBytes: 512 });
}

export function run(seed: number, crashes: number): RunStats {
  const rnd = seeded(seed);
  const fs = new SimulatedDisk();
  const stats: RunStats = { crashes: 0, tornCuts: 0, saves: 0 };
  let { storage, state } = openOn(fs);
  let model = LogModel.from(state);
  // Every state a crash could leave: the last durable one and each record written since.
  let candidates = [model.clone()];
  const snapshots = new Set(['0/0']);
  let durableSnapshot = 0;

  const save = (batch: { snapshot?: { index: number; term: number }; entries: ReturnType<typeof entries>; hardState?: HardState }, sync: boolean) => {
    const hardState =
      batch.hardState && (batch.hardState.term !== model.hs.term || batch.hardState.vote !== model.hs.vote || batch.hardState.commit !== model.hs.commit)
        ? batch.hardState
        : undefined;
    const states = model.batchStates({ ...batch, hardState });
    candidates.push(...states);
    if (batch.snapshot) snapshots.add(`${batch.snapshot.index}/${batch.snapshot.term}`);
    const snapshot = batch.snapshot && { meta: { ...batch.snapshot, conf: CONF }, data: Buffer.from(`state at ${batch.snapshot.index}`) };
    storage.save({ snapshot, entries: batch.entries, hardState: batch.hardState }, { sync });
    stats.saves++;
    model = states.at(-1)!;
    if (batch.snapshot) durableSnapshot = batch.snapshot.index;
    if (sync) candidates = [model.clone()];
  };

  const step = () => {
    const r = rnd();
    const hs = model.hs;
    const last = model.last();
    if (r < 0.7) {
      const n = 1 + Math.floor(rnd() * 8);
      const term = Math.max(hs.term, 1);
      const commit = Math.min(last + n, hs.commit + Math.floor(rnd() * 6));
      save({ entries: entries(last + 1, last + n, term), hardState: { ...hs, term, commit } }, rnd() < 0.75);
    } else if (r < 0.8) {
      // A new leader overwrites the uncommitted tail.
      const from = Math.max(hs.commit, model.baseIndex) + 1 + Math.floor(rnd() * (last - Math.max(hs.commit, model.baseIndex) + 1));
      const term = hs.term + 1;
      save({ entries: entries(from, from + Math.floor(rnd() * 4), term), hardState: { term, vote: 0n, commit: hs.commit } }, true);
    } else if (r < 0.88) {
      const snap = storage.snapshotMeta().index;
      if (hs.commit <= snap) return;
      const at = snap + 1 + Math.floor(rnd() * (hs.commit - snap));
      const term = model.term(at)!;
      snapshots.add(`${at}/${term}`);
      storage.saveSnapshot({ meta: { index: at, term, conf: CONF }, data: Buffer.from(`state at ${at}`) });
      durableSnapshot = at;
      const to = Math.max(0, at - Math.floor(rnd() * 6));
      storage.compact(to);
      model.compact(to); // only to bound the model: a restart starts after a snapshot >= `to` anyway
    } else if (r < 0.93) {
      // The leader sends a snapshot: it replaces the whole log.
      const at = last + 1 + Math.floor(rnd() * 10);
      const term = hs.term + 1;
      save({ snapshot: { index: at, term }, entries: entries(at + 1, at + Math.floor(rnd() * 3), term), hardState: { term, vote: 0n, commit: at } }, true);
    } else if (r < 0.95) {
      // --force-new-cluster: the same log under a one-member configuration.
      const snap = storage.snapshotMeta();
      const kept = [];
      for (let i = snap.index + 1; i <= last; i++) kept.push(entry(i, model.term(i)!));
      const hardState = { term: hs.term, vote: 0n, commit: last };
      candidates.push(...model.batchStates({ snapshot: snap, entries: kept, hardState }));
      storage.rewrite({ hardState, snapshot: { ...snap, conf: { voters: [IDENTITY.memberId], learners: [] } }, entries: kept });
      model = candidates.at(-1)!;
      candidates = [model.clone()];
    } else {
      save({ entries: [], hardState: { term: hs.term + 1, vote: BigInt(1 + Math.floor(rnd() * 3)), commit: hs.commit } }, true);
    }
  };

  const crashOptions = (): CrashOptions => (rnd() < 0.5 ? { random: rnd } : {});

  for (let c = 0; c < crashes; c++) {
    fs.scheduleCrash(1 + Math.floor(rnd() * 60), crashOptions());
    try {
      for (let i = 0; i < 1000; i++) step();
      fs.crash(crashOptions());
    } catch (err) {
      if (!(err instanceof SimulatedCrash)) throw err;
    }
    stats.crashes++;
    // Recover; sometimes crash again during recovery.
    let warnings: StorageWarning[] = [];
    for (let attempt = 0; ; attempt++) {
      if (attempt < 3 && rnd() < 0.2) fs.scheduleCrash(1 + Math.floor(rnd() * 8), crashOptions());
      try {
        ({ storage, state, warnings } = openOn(fs));
        fs.cancelCrash();
        break;
      } catch (err) {
        if (!(err instanceof SimulatedCrash)) throw err;
        stats.crashes++;
      }
    }
    stats.tornCuts += warnings.filter((w) => w.msg.startsWith('cut off a torn record')).length;
    const where = `seed ${seed}, crash ${c}`;
    assert.ok(snapshots.has(`${state.snapshot.index}/${state.snapshot.term}`), `${where}: snapshot ${state.snapshot.index} was never written`);
    assert.ok(state.snapshot.index >= durableSnapshot, `${where}: snapshot ${durableSnapshot} was saved but ${state.snapshot.index} came back`);
    const failure = checkRecovered(state, candidates);
    assert.equal(failure, undefined, `${where}: ${failure}`);
    model = LogModel.from(state);
    candidates = [model.clone()];
    durableSnapshot = state.snapshot.index;
  }
  storage.close();
  return stats;
}

// `LIFEBOAT_SIM_SEEDS=100 node --test dist/test/storage/simulatedCrash.test.js` for a longer hunt.
const SEEDS = Number(process.env.LIFEBOAT_SIM_SEEDS ?? 4);

describe('raft storage on a simulated disk that crashes', () => {
  it('keeps every acknowledged record through hundreds of crashes', (t) => {
    const total: RunStats = { crashes: 0, tornCuts: 0, saves: 0 };
    for (let seed = 1; seed <= SEEDS; seed++) {
      const s = run(seed, 100);
      total.crashes += s.crashes;
      total.tornCuts += s.tornCuts;
      total.saves += s.saves;
    }
    assert.ok(total.crashes >= 400, `crashes: ${total.crashes}`);
    t.diagnostic(`${total.crashes} crashes, ${total.saves} saves, ${total.tornCuts} torn tails cut`);
    assert.ok(total.tornCuts > 0, 'no torn tail was ever cut: the tearing is not exercised');
  });
});
