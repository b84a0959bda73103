// Failpoints: the one way a test makes a *separate process* fail at a chosen
// place (as etcd's gofail). In-process tests pass knobs at construction instead.
//
// Set with environment variables, read here only, and only in a test build:
//
//   LIFEBOAT_FAULT=<point>[,<point>...]      a point is `name` or `name:arg`; read each time a point is checked
//   LIFEBOAT_FAULT_FILE=<file>               points (one per line) read when a point is first checked and again
//                                            whenever the file changes (polled every 50 ms): faults
//                                            a test turns on and off while the process runs
//
// Not in a release: the bundled entries bin/run.js runs (dist/member.cjs, ...) are
// built with __LIFEBOAT_FAULTS__ false, so esbuild drops every call site guarded by
// it, with its point's name (test/cli/releaseBundle.test.ts greps for them); the test
// member bundle is built with it true. tsc's modules, which the oclif commands and the
// kv worker thread run, keep their points but ignore them until a test's entry point
// arms them (armFailpoints: test/support/lifeboatWithFaults.ts).
//
// "Die" is a SIGKILL to itself (a shell shows exit 137): no cleanup, as a kill -9
// leaves things (the page cache survives; the power-loss model covers what it does not).
import fs from 'node:fs';

declare global {
  /** Whether failpoint call sites are built in: esbuild's `define` (scripts/build/bundleEntries.ts); tsc's modules: true, below. */
  const __LIFEBOAT_FAULTS__: boolean;
}
// tsc's modules have no define: the constant is a global, set before any module that imports this one reads it.
if (typeof __LIFEBOAT_FAULTS__ === 'undefined') Object.assign(globalThis, { __LIFEBOAT_FAULTS__: true });

/** Every point (this table is the documentation: add a point here first), with where it acts. */
export const FAILPOINTS = {
  'snapshot-install': {
    in: 'member',
    does: "die after Raft recorded a leader's snapshot, at a step of its install (snapshot-install:<step>): before (kv.db untouched), stripped (the received file's trailer cut off), moved (the file is kv.db, still with the leader's member ID); restored: a restart's install of it, copied into place before the member ID is ours",
  },
  'after-step': { in: 'playbook run', does: "after-step:<step id>: die after the step's work returned, before its end is recorded" },
  'migrate-copy': { in: 'migrate', does: 'migrate-copy:<N>: die once N copy batches are recorded' },
  'sync-journal': { in: 'member', does: 'sync-journal:<file>: after every fsync of the raft log, append "<segment> <offset>" made durable to <file>' },
  'ack-before-fsync': { in: 'member', does: "a planted bug: apply and answer without waiting for the log's fsync" },
  'drop-to': { in: 'member', does: 'drop-to:<member id hex>: drop every message to that member (a partition, one way)' },
  'drop-from': { in: 'member', does: 'drop-from:<member id hex>: drop every message from that member' },
  'grpc-peer-stream-only': { in: 'member', does: 'take and dial no raw message stream, as a member from before them' },
  'fsync-eio': { in: 'member', does: 'every fsync in the data dir fails with EIO (the member must stop, never retry)' },
  'kv-fsync-eio': { in: 'member', does: "every fsync of kv.db and its WAL fails with EIO (a checkpoint's too: the member must stop)" },
  'defragment-slow': { in: 'kv worker', does: "defragment-slow:<ms>: defragment holds the write lock <ms> longer (a large store's VACUUM)" },
  'defragment-fsync-eio': { in: 'kv worker', does: "the fsync after a defragment's VACUUM fails with EIO (the member must stop)" },
  'stale-local-reads': { in: 'member', does: 'a planted bug: linearizable reads are served from local state' },
} as const satisfies Record<string, { in: 'member' | 'kv worker' | 'playbook run' | 'migrate'; does: string }>;

export const FAILPOINT_ENV = 'LIFEBOAT_FAULT';
export const FAILPOINT_FILE_ENV = 'LIFEBOAT_FAULT_FILE';

/** worker_threads' environment data: an armed thread's worker threads are armed too (the kv worker). */
const ARMED_KEY = 'lifeboat:failpoints-armed';
let armed: boolean | undefined;

/**
 * Makes this thread (and the worker threads it starts) honour failpoints: only a
 * test's entry point calls it, before it loads the command or the test member bundle.
 */
export function armFailpoints(): void {
  process.getBuiltinModule('node:worker_threads').setEnvironmentData(ARMED_KEY, true);
  armed = true;
}

const NONE: readonly string[] = [];
let envText = '';
let envPoints: readonly string[] = NONE;
let watched: string | undefined;
let filePoints: readonly string[] = NONE;
let all: readonly string[] = NONE;

function parse(text: string, sep: RegExp): string[] {
  return text
    .split(sep)
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
}

function watch(file: string): void {
  const reload = () => {
    try {
      filePoints = parse(fs.readFileSync(file, 'utf8'), /\n/);
    } catch {
      filePoints = NONE;
    }
    all = [...envPoints, ...filePoints];
  };
  if (watched) fs.unwatchFile(watched);
  watched = file;
  reload();
  // Polled, not signalled: a signal sent before the handler exists would kill the process.
  fs.watchFile(file, { interval: 50, persistent: false }, reload);
}

/** The points set now (nothing unless armed): the variable as it is now, and the file as last read. */
function points(): readonly string[] {
  armed ??= process.getBuiltinModule('node:worker_threads').getEnvironmentData(ARMED_KEY) === true;
  if (!armed) return NONE;
  const text = process.env[FAILPOINT_ENV] ?? '';
  if (text !== envText) {
    envText = text;
    envPoints = parse(text, /,/);
    all = [...envPoints, ...filePoints];
  }
  const file = process.env[FAILPOINT_FILE_ENV];
  if (file && file !== watched) watch(file);
  return all;
}

/** What a member started with says in its first log line: the points set and the file it polls, if any. */
export function failpointsInEffect(): { failpoints: readonly string[]; failpointFile?: string } | undefined {
  const set = points();
  if (set.length === 0 && !watched) return undefined;
  return { failpoints: set, ...(watched ? { failpointFile: watched } : {}) };
}

/** Whether any point is set: lets a hot path skip the lookups. */
export function anyFailpoint(): boolean {
  return points().length > 0;
}

/** Whether `point` (a `name` or `name:arg`) is set. */
export function failpointSet(point: string): boolean {
  return points().includes(point);
}

/** The argument of a point set as `name:arg`, if it is set. */
export function failpointArg(name: string): string | undefined {
  const p = points().find((x) => x.startsWith(`${name}:`));
  return p?.slice(name.length + 1);
}

/** A disk's I/O error on an fsync of `file` (fsync-eio, kv-fsync-eio), thrown when `point` is set. */
export function failFsyncAt(point: string, file: string): void {
  if (failpointSet(point)) throw Object.assign(new Error(`EIO: i/o error, fsync '${file}'`), { code: 'EIO' });
}

/** Dies here, at once and without cleanup, when `point` is set. */
export function crashAt(point: string): void {
  if (failpointSet(point)) dieNow();
}

/** A kill -9 of this process: no exit handlers, nothing flushed. */
export function dieNow(): never {
  process.kill(process.pid, 'SIGKILL');
  // Not reached: SIGKILL cannot be caught.
  process.exit(137);
}
