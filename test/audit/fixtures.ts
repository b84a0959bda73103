// Shared by the audit tests: temp dirs, a fake clock, a recorded sample run, and
// raw-SQL tampering that puts the append-only triggers back afterwards (as a
// careful attacker would), so only the chain itself can give the edit away.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import Database from 'better-sqlite3';
import { AuditLog } from '../../src/audit/index.js';
import type { StepRecord } from '../../src/audit/types.js';

/** A fresh directory under the OS temp dir, removed when the test file ends. */
export function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'lifeboat-audit-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function tempDbPath(): string {
  return path.join(tempDir(), 'state', 'audit.db');
}

/** A clock that moves only when told to. */
export class FakeClock {
  private ms: number;
  constructor(startIso = '2026-11-22T08:30:15.000Z') {
    this.ms = Date.parse(startIso);
  }
  now = (): Date => new Date(this.ms);
  advance(ms: number): void {
    this.ms += ms;
  }
}

export const WHO = { user: 'alice', host: 'db-admin-1' };

export function openLog(file: string, clock = new FakeClock()): AuditLog {
  return AuditLog.open(file, { now: clock.now, who: WHO });
}

export interface SampleRun {
  runId: string;
  head: string;
  steps: StepRecord[];
}

/**
 * A run that verifies a snapshot (with a prompt), records an --assume-dead
 * override, fails to restore, and ends failed: 8 chain rows.
 */
export function recordSampleRun(log: AuditLog, clock: FakeClock): SampleRun {
  const run = log.startRun({
    playbook: 'restore-3-members',
    playbookSha256: 'ab'.repeat(32),
    reason: 'm1 lost its disk',
    variables: { snapshot: '/srv/backup.db', members: 3 },
    clusterIdBefore: '8e9e05c52164694d',
    memberIdsBefore: ['a1', 'b2', 'c3'],
  });
  clock.advance(100);
  const s1 = log.startStep(run.id, { ordinal: 1, stepId: 'verify', name: 'Verify the snapshot', type: 'verify-snapshot', inputs: { file: '/srv/backup.db' } });
  clock.advance(400);
  log.recordPrompt(run.id, 'Is m1 really dead?', 'yes', { step: s1 });
  clock.advance(800);
  const s1done = log.finishStep(s1, { status: 'succeeded', outputs: { revision: 42 } });
  clock.advance(50);
  log.event(run.id, { kind: 'assume-dead', message: 'member a1 assumed dead (--assume-dead a1)', data: { member: 'a1' } });
  clock.advance(50);
  const s2 = log.startStep(run.id, { ordinal: 2, stepId: 'restore', type: 'restore', inputs: { dataDir: '/srv/m1' } });
  clock.advance(300);
  const s2done = log.finishStep(s2, { status: 'failed', error: 'data dir /srv/m1 is locked by pid 4121 (a member is running); stop it first' });
  clock.advance(10);
  const head = log.finishRun(run.id, { outcome: 'failed', error: 'step 2 (restore) failed' });
  return { runId: run.id, head, steps: [s1done, s2done] };
}

/** Runs `sql` on the file directly, with the append-only triggers lifted for the duration. */
export function tamper(file: string, ...sql: string[]): void {
  const db = new Database(file);
  try {
    const triggers = db.prepare(`SELECT name, sql FROM sqlite_schema WHERE type = 'trigger'`).all() as Array<{ name: string; sql: string }>;
    for (const t of triggers) db.exec(`DROP TRIGGER ${t.name}`);
    for (const s of sql) db.exec(s);
    for (const t of triggers) db.exec(t.sql);
  } finally {
    db.close();
  }
}

export interface RawChainRow {
  seq: number;
  at: string;
  kind: string;
  run_id: string;
  payload: string;
  prev_hash: string;
  hash: string;
}

export function chainRows(file: string): RawChainRow[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare(`SELECT * FROM chain ORDER BY seq`).all() as RawChainRow[];
  } finally {
    db.close();
  }
}
