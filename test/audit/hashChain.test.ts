// The hash chain: an intact log verifies; every kind of tampering is named by row.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { canonicalJson, GENESIS_HASH, linkHash } from '../../src/audit/hashChain.js';
import { AuditLog } from '../../src/audit/index.js';
import { chainRows, FakeClock, openLog, recordSampleRun, tamper, tempDbPath, type RawChainRow } from './fixtures.js';

/** A log holding the sample run (8 rows), closed; its path and the head finishRun returned. */
function sampleLog() {
  const file = tempDbPath();
  const clock = new FakeClock();
  const log = openLog(file, clock);
  const sample = recordSampleRun(log, clock);
  log.close();
  return { file, ...sample };
}

function verify(file: string, head?: string) {
  const log = AuditLog.open(file, { readonly: true, checkSchema: false });
  try {
    return log.verify(head);
  } finally {
    log.close();
  }
}

function assertBadAt(result: ReturnType<typeof verify>, seq: number | null, reason: RegExp) {
  assert.equal(result.ok, false, 'verify should fail');
  if (result.ok) return;
  assert.equal(result.firstBad.seq, seq, result.firstBad.reason);
  assert.match(result.firstBad.reason, reason);
}

test('canonical JSON sorts keys at every depth and has no whitespace', () => {
  assert.equal(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: 'x' }, u: undefined }), '{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}');
  assert.equal(canonicalJson({ n: 10n, t: new Date(0) }), '{"n":"10","t":"1970-01-01T00:00:00.000Z"}');
});

test('each row hash is sha256(prev_hash || canonical JSON of [seq, at, kind, run_id, payload])', () => {
  const { file } = sampleLog();
  const rows = chainRows(file);
  assert.equal(rows.length, 8);
  let prev = GENESIS_HASH;
  for (const r of rows) {
    assert.equal(r.prev_hash, prev);
    const body = canonicalJson([r.seq, r.at, r.kind, r.run_id, JSON.parse(r.payload)]);
    assert.equal(
      r.hash,
      createHash('sha256')
        .update(prev + body)
        .digest('hex'),
    );
    prev = r.hash;
  }
  assert.deepEqual(
    rows.map((r) => r.kind),
    ['run.start', 'step.start', 'event', 'step.end', 'event', 'step.start', 'step.end', 'run.end'],
  );
});

test('an intact chain verifies, ending at the head finishRun returned', () => {
  const { file, head } = sampleLog();
  assert.deepEqual(verify(file), { ok: true, head, rows: 8 });
  assert.deepEqual(verify(file, head), { ok: true, head, rows: 8 });
  assert.deepEqual(verify(file, head.toUpperCase()), { ok: true, head, rows: 8 });
});

test('an empty log verifies with the genesis head and 0 rows', () => {
  const file = tempDbPath();
  openLog(file).close();
  assert.deepEqual(verify(file), { ok: true, head: GENESIS_HASH, rows: 0 });
});

test('a payload edited with raw SQL is named by its seq', () => {
  const { file } = sampleLog();
  tamper(file, `UPDATE chain SET payload = json_set(payload, '$.error', 'nothing went wrong') WHERE seq = 7`);
  assertBadAt(verify(file), 7, /hash does not match the row \(its contents were edited\)/);
});

test('an edited timestamp, kind or run ID is detected', () => {
  for (const [set, seq] of [
    [`at = '2026-11-22T09:00:00.000Z'`, 3],
    [`run_id = 'r-20990101-000000-0000'`, 5],
    [`kind = 'event'`, 6],
  ] as const) {
    const { file } = sampleLog();
    tamper(file, `UPDATE chain SET ${set} WHERE seq = ${seq}`);
    assertBadAt(verify(file), seq, /hash does not match the row/);
  }
});

test('a payload that is no longer JSON is named', () => {
  const { file } = sampleLog();
  tamper(file, `UPDATE chain SET payload = 'oops' WHERE seq = 2`);
  assertBadAt(verify(file), 2, /not valid JSON/);
});

test('a row deleted from the middle is named', () => {
  const { file } = sampleLog();
  tamper(file, `DELETE FROM chain WHERE seq = 3`);
  assertBadAt(verify(file), 3, /row 3 is missing: the chain goes from row 2 to row 4/);
});

test('rows deleted from the start are detected', () => {
  const { file } = sampleLog();
  tamper(file, `DELETE FROM chain WHERE seq <= 2`);
  assertBadAt(verify(file), 1, /rows 1-2 are missing/);
});

test('a row deleted from the end passes on its own but fails against the expected head', () => {
  const { file, head } = sampleLog();
  tamper(file, `DELETE FROM chain WHERE seq = 8`);
  const alone = verify(file);
  assert.equal(alone.ok, true, 'a shorter chain is still a valid chain: this is why the head is kept elsewhere');
  assertBadAt(verify(file, head), 7, /not at the expected head .*rows were removed from the end/);
});

test('two rows swapped are detected at the first of them', () => {
  const { file } = sampleLog();
  tamper(file, `UPDATE chain SET seq = -1 WHERE seq = 4`, `UPDATE chain SET seq = 4 WHERE seq = 5`, `UPDATE chain SET seq = 5 WHERE seq = -1`);
  assertBadAt(verify(file), 4, /prev_hash does not match the hash of row 3|hash does not match the row/);
});

test('swapping contents but keeping seq, prev_hash and hash in place is detected', () => {
  const { file } = sampleLog();
  const rows = chainRows(file);
  const [a, b] = [rows[3], rows[4]];
  const set = (target: RawChainRow, from: RawChainRow) =>
    `UPDATE chain SET at = '${from.at}', kind = '${from.kind}', payload = '${from.payload.replaceAll("'", "''")}' WHERE seq = ${target.seq}`;
  tamper(file, set(a, b), set(b, a));
  assertBadAt(verify(file), 4, /hash does not match the row/);
});

test('a row inserted in the middle is detected, even with the rest renumbered', () => {
  const { file } = sampleLog();
  const rows = chainRows(file);
  const forged = rows[2]; // an event
  tamper(
    file,
    `UPDATE chain SET seq = seq + 100 WHERE seq >= 3`,
    `UPDATE chain SET seq = seq - 99 WHERE seq >= 103`,
    `INSERT INTO chain (seq, at, kind, run_id, payload, prev_hash, hash) VALUES (3, '${forged.at}', 'event', '${forged.run_id}',
       '{"kind":"note","message":"approved by the CTO"}', '${rows[1].hash}', '${'0'.repeat(64)}')`,
  );
  assertBadAt(verify(file), 3, /hash does not match the row/);
});

test('a row rewritten with a recomputed hash is caught at the next row', () => {
  const { file } = sampleLog();
  const rows = chainRows(file);
  const r = rows[6];
  const payload = canonicalJson({ ...JSON.parse(r.payload), status: 'succeeded', error: undefined });
  const hash = linkHash(r.prev_hash, { seq: r.seq, at: r.at, kind: r.kind, runId: r.run_id, payload });
  tamper(file, `UPDATE chain SET payload = '${payload}', hash = '${hash}' WHERE seq = 7`);
  assertBadAt(verify(file), 8, /prev_hash does not match the hash of row 7/);
});

test('a whole chain rewritten consistently passes on its own but not against the expected head', () => {
  const { file, head } = sampleLog();
  const rows = chainRows(file);
  const statements: string[] = [`DELETE FROM chain`];
  let prev = GENESIS_HASH;
  for (const r of rows) {
    const payload = r.seq === 7 ? canonicalJson({ ...JSON.parse(r.payload), status: 'succeeded', error: undefined }) : r.payload;
    const hash = linkHash(prev, { seq: r.seq, at: r.at, kind: r.kind, runId: r.run_id, payload });
    statements.push(`INSERT INTO chain VALUES (${r.seq}, '${r.at}', '${r.kind}', '${r.run_id}', '${payload.replaceAll("'", "''")}', '${prev}', '${hash}')`);
    prev = hash;
  }
  tamper(file, ...statements);
  assert.equal(verify(file).ok, true);
  assertBadAt(verify(file, head), 8, /not at the expected head/);
});

test('a forged chain that breaks the recording rules is named even with correct hashes', () => {
  const { file, runId } = sampleLog();
  const rows = chainRows(file);
  const last = rows.at(-1)!;
  const at = '2026-11-22T08:31:00.000Z';
  const payload = canonicalJson({ kind: 'note', message: 'added later' });
  const hash = linkHash(last.hash, { seq: 9, at, kind: 'event', runId, payload });
  tamper(file, `INSERT INTO chain VALUES (9, '${at}', 'event', '${runId}', '${payload}', '${last.hash}', '${hash}')`);
  assertBadAt(verify(file), 9, /event for run .* after it ended/);
});

test('a redefined view (what the commands display) is detected', () => {
  const { file } = sampleLog();
  tamper(file, `DROP VIEW runs`, `CREATE VIEW runs AS SELECT 'x' AS id`);
  assertBadAt(verify(file), null, /schema changed: view runs was redefined/);
  assert.throws(() => AuditLog.open(file, { readonly: true }), /was tampered with \(view runs was redefined\); see 'lifeboat audit verify'/);
});

test('a dropped trigger is detected', () => {
  const { file } = sampleLog();
  const db = new Database(file);
  db.exec('DROP TRIGGER chain_no_delete');
  db.close();
  assertBadAt(verify(file), null, /trigger chain_no_delete was dropped/);
});

test('an older head: the rows written after it are pointed out', () => {
  const file = tempDbPath();
  const clock = new FakeClock();
  const log = openLog(file, clock);
  const first = recordSampleRun(log, clock);
  recordSampleRun(log, clock);
  log.close();
  assertBadAt(verify(file, first.head), 9, /written after the expected head \(row 8\); the chain continues to row 16/);
});

test('an empty chain against an expected head fails', () => {
  const file = tempDbPath();
  openLog(file).close();
  assertBadAt(verify(file, 'a'.repeat(64)), null, /the chain is empty/);
});
