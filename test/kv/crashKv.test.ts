// The KV in a process killed with SIGKILL at random moments: a child
// (crashKvChild.ts) applies batches of entries as a member does, reporting each
// batch before it starts and after it commits; the parent kills it, reopens the
// same kv.db and checks that the applied index matches the contents: the store
// equals a model that applied exactly entries 1..applied (every request up to the
// applied index visible, none after), and the applied index is the last committed
// batch or the one in flight, never between. Then the next child carries on.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { KvStore } from '../../src/kv/kvStore.js';
import { seeded, tempDir } from '../storage/fixtures.js';
import { requestAt } from './crashRequests.js';
import { b } from './kvFixture.js';

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'crashKvChild.js');
// Four at once: most of a kill is the child starting up, which overlaps well.
const LINEAGES = 4;
// `LIFEBOAT_KV_KILLS=1000 node --test dist/test/kv/crashKv.test.js` for a longer hunt.
// Bounded by count (and the test's timeout): each kill costs ~140 ms of CPU, nearly
// all of it a child starting node and better-sqlite3.
const KILLS_PER_LINEAGE = Math.ceil(Number(process.env.LIFEBOAT_KV_KILLS ?? 104) / LINEAGES);

interface Lineage {
  db: string;
  rnd: () => number;
  /** Entries 1..model.appliedIndex() applied in memory. */
  model: KvStore;
  kills: number;
  midBatch: number;
  tornBatches: number;
}

function everything(kv: KvStore) {
  return kv
    .range({ key: b('\0'), rangeEnd: b('\0') })
    .kvs.map((x) => `${x.key.toString()}=${x.value.toString()}@${x.createRevision}/${x.modRevision}/${x.version}`);
}

async function killOnce(l: Lineage, round: number): Promise<void> {
  const child = spawn(process.execPath, [CHILD, l.db, String(round * 7919 + 17)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const closed = new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_code, signal) => resolve(signal)));
  const kill = (afterMs: number) => setTimeout(() => child.kill('SIGKILL'), afterMs);
  // Mostly kill while it applies; sometimes while it opens (WAL recovery).
  const early = l.rnd() < 0.1;
  const delay = l.rnd();
  if (early) kill(10 + delay * 80);

  let committed = l.model.appliedIndex();
  let inflight: number | undefined;
  const lines = readline.createInterface({ input: child.stdout });
  lines.on('line', (line) => {
    const [what, x, y] = line.split(' ');
    if (what === 'ready') {
      assert.equal(Number(x), committed, `${l.db}: the child opened at ${x}, the last check saw ${committed}`);
      if (!early) kill(delay * 30);
    } else if (what === 'B') {
      assert.equal(Number(x), committed + 1);
      inflight = Number(y);
    } else if (what === 'D') {
      inflight = committed;
    } else if (what === 'A') {
      committed = Number(x);
      inflight = undefined;
    }
  });
  const signal = await closed;
  assert.equal(signal, 'SIGKILL', `child ended by itself: ${stderr}`);
  l.kills++;
  if (inflight !== undefined) l.midBatch++;

  const kv = KvStore.open(l.db, { autoCheckpoint: false });
  try {
    const applied = kv.appliedIndex();
    const where = `${l.db}, kill ${l.kills}`;
    assert.ok(
      applied === committed || applied === inflight,
      `${where}: applied index ${applied}, but the last committed batch ended at ${committed} and the one in flight at ${inflight}`,
    );
    if (inflight !== undefined && inflight !== committed && applied === committed) l.tornBatches++;
    const batch: { index: number; term: number; request: ReturnType<typeof requestAt> }[] = [];
    for (let i = l.model.appliedIndex() + 1; i <= applied; i++) batch.push({ index: i, term: 1, request: requestAt(i) });
    if (batch.length > 0) l.model.applyBatch(batch);
    assert.equal(kv.currentRevision(), l.model.currentRevision(), `${where}: revision`);
    assert.equal(kv.compactRevision(), l.model.compactRevision(), `${where}: compaction`);
    assert.deepEqual(everything(kv), everything(l.model), `${where}: contents differ from entries 1..${applied}`);
    assert.equal(kv.hash(), l.model.hash(), `${where}: hash`);
  } finally {
    kv.close();
  }
}

describe('KV in a process killed with SIGKILL', () => {
  it(`matches its applied index after ${LINEAGES * KILLS_PER_LINEAGE} kills`, { timeout: process.env.LIFEBOAT_KV_KILLS ? undefined : 180_000 }, async (t) => {
    const dirs = Array.from({ length: LINEAGES }, (_, i) => tempDir(`kvkill${i}`));
    const lineages: Lineage[] = dirs.map((d, i) => ({
      db: path.join(d.dir, 'kv.db'),
      rnd: seeded(2000 + i),
      model: KvStore.open(':memory:'),
      kills: 0,
      midBatch: 0,
      tornBatches: 0,
    }));
    try {
      const started = Date.now();
      await Promise.all(
        lineages.map(async (l) => {
          for (let round = 0; round < KILLS_PER_LINEAGE; round++) await killOnce(l, round);
        }),
      );
      const sum = (f: (l: Lineage) => number) => lineages.reduce((n, l) => n + f(l), 0);
      const kills = sum((l) => l.kills);
      t.diagnostic(
        `${kills} kills, ${sum((l) => l.midBatch)} mid-operation, ${sum((l) => l.tornBatches)} batches lost whole, applied ${lineages.map((l) => l.model.appliedIndex()).join('/')} entries, ${Date.now() - started} ms`,
      );
      assert.ok(kills >= 100);
      assert.ok(sum((l) => l.midBatch) >= kills / 4, 'too few kills landed in the middle of a batch');
    } finally {
      for (const l of lineages) l.model.close();
      for (const d of dirs) d.cleanup();
    }
  });
});
