// Failpoints: the one way a test makes a *separate process* fail at a chosen
// place (as etcd's gofail). In-process tests pass knobs at construction instead.
//
// Set with environment variables, read here only:
//
//   LIFEBOAT_FAULT=<point>[,<point>...]      a point is `name` or `name:arg`; read once
//   LIFEBOAT_FAULT_FILE=<file>               points (one per line) read at start and again
//                                            whenever the file changes (polled every 50 ms): faults
//                                            a test turns on and off while the process runs
//
// Points in use (this list is the documentation; add a point here first):
//   snapshot-install:<step>   member: die after Raft recorded a leader's snapshot, at a step of its install:
//                             before (kv.db untouched), stripped (the received file's trailer cut off),
//                             moved (the file is kv.db, still with the leader's member ID); restored: a
//                             restart's install of it, copied into place before the member ID is ours
//   after-step:<step id>      playbook run: die after the step's work returned, before its end is recorded
//   migrate-copy:<N>          migrate: die once N copy batches are recorded
//   sync-journal:<file>       raft storage: after every fsync of the log, append "<segment> <offset>" made durable to <file>
//   ack-before-fsync          member, a planted bug: apply and answer without waiting for the log's fsync
//   drop-to:<member id hex>   peer transport: drop every message to that member (a partition, one way)
//   drop-from:<member id hex> peer transport: drop every message from that member
//   grpc-peer-stream-only     peer transport: take and dial no raw message stream, as a member from before them
//   fsync-eio                 data dir: every fsync fails with EIO (the member must stop, never retry)
//   kv-fsync-eio              kv.db: every fsync of kv.db and its WAL fails with EIO (a checkpoint's too: the member must stop)
//   defragment-slow:<ms>      kv worker: defragment holds the write lock <ms> longer (a large store's VACUUM)
//   defragment-fsync-eio      kv worker: the fsync after a defragment's VACUUM fails with EIO (the member must stop)
//   stale-local-reads         member, a planted bug: linearizable reads are served from local state
//
// "Die" is a SIGKILL to itself (a shell shows exit 137): no cleanup, as a kill -9
// leaves things (the page cache survives; the power-loss model covers what it does not).
import fs from 'node:fs';

export const FAILPOINT_ENV = 'LIFEBOAT_FAULT';
export const FAILPOINT_FILE_ENV = 'LIFEBOAT_FAULT_FILE';

let fixed: readonly string[] | undefined;
let runtime: readonly string[] = [];
let all: readonly string[] = [];

function parse(text: string, sep: RegExp): string[] {
  return text
    .split(sep)
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
}

function points(): readonly string[] {
  if (fixed === undefined) {
    fixed = parse(process.env[FAILPOINT_ENV] ?? '', /,/);
    const file = process.env[FAILPOINT_FILE_ENV];
    if (file) {
      const reload = () => {
        try {
          runtime = parse(fs.readFileSync(file, 'utf8'), /\n/);
        } catch {
          runtime = [];
        }
        all = [...(fixed ?? []), ...runtime];
      };
      reload();
      // Polled, not signalled: a signal sent before the handler exists would kill the process.
      fs.watchFile(file, { interval: 50, persistent: false }, reload);
    }
    all = [...fixed, ...runtime];
  }
  return all;
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
