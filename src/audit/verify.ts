// Verifying the audit log: walks the hash chain in one read transaction and
// returns the first row that was edited, removed, inserted, reordered or could
// not have been written where it stands; then the schema and the expected head.
import type Database from 'better-sqlite3';
import { GENESIS_HASH, linkHash } from './hashChain.js';
import type { ChainRow, Statements } from './rows.js';
import { schemaDifferences } from './schema.js';
import { CHAIN_KINDS, RUN_OUTCOMES, STEP_STATUSES, type VerifyResult } from './types.js';

/**
 * Walks the whole chain in one read transaction: rows numbered 1, 2, … with no
 * gap, each prev_hash equal to the previous row's hash, each hash recomputed
 * from its row, each row making sense where it is (a step ends once, in a run
 * that started and has not ended, …); then the schema, since the commands show
 * the runs/steps/events views; then, if `expectedHead` is given, that the chain
 * ends exactly there. The first problem found is returned.
 */
export function verifyChain(db: Database.Database, q: Statements, expectedHead?: string): VerifyResult {
  return db.transaction((): VerifyResult => {
    let prevHash = GENESIS_HASH;
    let expectedSeq = 1;
    const seen = new Map<string, number>(); // hash → seq, to place an old --head
    const runs = new Map<string, { ended: boolean }>();
    const steps = new Map<number, { runId: string; ended: boolean }>();
    for (const row of q.chainAll.iterate() as IterableIterator<ChainRow>) {
      const bad = (reason: string): VerifyResult => ({ ok: false, firstBad: { seq: row.seq, reason } });
      if (row.seq !== expectedSeq) {
        if (row.seq > expectedSeq) {
          const what = row.seq === expectedSeq + 1 ? `row ${expectedSeq} is missing` : `rows ${expectedSeq}-${row.seq - 1} are missing`;
          return {
            ok: false,
            firstBad: { seq: expectedSeq, reason: `${what}: the chain goes from row ${expectedSeq - 1} to row ${row.seq}` },
          };
        }
        return bad(`rows must be numbered from 1, found ${row.seq}`);
      }
      if (row.prev_hash !== prevHash) {
        return bad(
          expectedSeq === 1
            ? 'prev_hash of the first row is not the genesis hash (rows were removed from the start)'
            : `prev_hash does not match the hash of row ${expectedSeq - 1} (that row was rewritten, or rows were removed, inserted or reordered)`,
        );
      }
      let hash: string;
      let payload: Record<string, unknown>;
      try {
        payload = JSON.parse(row.payload) as Record<string, unknown>;
        hash = linkHash(row.prev_hash, { seq: row.seq, at: row.at, kind: row.kind, runId: row.run_id, payload: row.payload });
      } catch {
        return bad('payload is not valid JSON (the row was edited)');
      }
      if (hash !== row.hash) return bad('hash does not match the row (its contents were edited)');
      const problem = rowProblem(row, payload, runs, steps);
      if (problem) return bad(problem);
      seen.set(row.hash, row.seq);
      prevHash = row.hash;
      expectedSeq++;
    }
    const rows = expectedSeq - 1;

    const schema = schemaDifferences(db);
    if (schema.length > 0) {
      return { ok: false, firstBad: { seq: null, reason: `schema changed: ${schema.join('; ')}` } };
    }

    if (expectedHead !== undefined && expectedHead.toLowerCase() !== prevHash) {
      const at = seen.get(expectedHead.toLowerCase());
      if (at !== undefined) {
        return {
          ok: false,
          firstBad: {
            seq: at + 1,
            reason: `written after the expected head (row ${at}); the chain continues to row ${rows}: if those rows are later runs, verify against the newest head`,
          },
        };
      }
      if (rows === 0) {
        return { ok: false, firstBad: { seq: null, reason: `the chain is empty, not ending at the expected head ${expectedHead} (every row was removed)` } };
      }
      return {
        ok: false,
        firstBad: {
          seq: rows,
          reason: `the chain ends here with hash ${prevHash}, not at the expected head ${expectedHead} (rows were removed from the end, or the chain was rewritten)`,
        },
      };
    }
    return { ok: true, head: prevHash, rows };
  })();
}

/**
 * Whether a row, correctly hashed, is one this code could have written where it
 * stands. Catches a chain forged or patched without respecting the rules (and
 * bugs); it cannot catch a careful forger who rewrote the whole chain: only an
 * expected head kept elsewhere does that.
 */
function rowProblem(
  row: ChainRow,
  p: Record<string, unknown>,
  runs: Map<string, { ended: boolean }>,
  steps: Map<number, { runId: string; ended: boolean }>,
): string | undefined {
  if (!(CHAIN_KINDS as readonly string[]).includes(row.kind)) return `unknown kind ${JSON.stringify(row.kind)}`;
  if (Number.isNaN(Date.parse(row.at))) return `timestamp ${JSON.stringify(row.at)} is not a date`;
  const run = runs.get(row.run_id);
  if (row.kind === 'run.start') {
    if (run) return `run ${row.run_id} is started a second time`;
    runs.set(row.run_id, { ended: false });
    return undefined;
  }
  if (!run) return `${row.kind} for run ${row.run_id}, which was never started`;
  if (row.kind === 'run.resume') {
    run.ended = false;
    return undefined;
  }
  if (run.ended) return `${row.kind} for run ${row.run_id} after it ended`;
  switch (row.kind) {
    case 'run.end':
      if (!(RUN_OUTCOMES as readonly string[]).includes(p.outcome as string) || p.outcome === 'running') {
        return `run end with outcome ${JSON.stringify(p.outcome)}`;
      }
      run.ended = true;
      return undefined;
    case 'step.start':
      steps.set(row.seq, { runId: row.run_id, ended: false });
      return undefined;
    case 'step.end': {
      const step = steps.get(p.step as number);
      if (!step || step.runId !== row.run_id) return `step end for step ${String(p.step)}, which run ${row.run_id} never started`;
      if (step.ended) return `step ${String(p.step)} ends a second time`;
      if (!(STEP_STATUSES as readonly string[]).includes(p.status as string) || p.status === 'running') {
        return `step end with status ${JSON.stringify(p.status)}`;
      }
      step.ended = true;
      return undefined;
    }
    case 'event': {
      const step = p.step as number | undefined; // a step's seq, as journaled
      if (step !== undefined && steps.get(step)?.runId !== row.run_id) {
        return `event for step ${step}, which run ${row.run_id} never started`;
      }
      return undefined;
    }
    default:
      return undefined;
  }
}
