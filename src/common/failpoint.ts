// Failpoints: the one way a test makes a *separate process* fail at a chosen
// place (as etcd's gofail). In-process tests pass knobs at construction instead.
//
// Set with the environment variable LIFEBOAT_FAULT, read once, here only:
//
//   LIFEBOAT_FAULT=<point>[,<point>...]      a point is `name` or `name:arg`
//
// Points in use (this list is the documentation; add a point here first):
//   before-snapshot-install   member: die after Raft recorded a leader's snapshot, before kv.db is replaced
//   after-step:<step id>      playbook run: die after the step's work returned, before its end is recorded
//   migrate-copy:<N>          migrate: die once N copy batches are recorded
//   sync-journal:<file>       raft storage: after every fsync of the log, append "<segment> <offset>" made durable to <file>
//   ack-before-fsync          member, a planted bug: apply and answer without waiting for the log's fsync
//
// Also read once, in one place, for a separate CLI process in tests:
//   LIFEBOAT_TEST_STEPS=<module>   playbook: add the module's fake step types (never replace one);
//                                  read in playbook/library.ts only
//
// "Die" is a SIGKILL to itself (a shell shows exit 137): no cleanup, as a kill -9
// leaves things (the page cache survives; the power-loss model covers what it does not).

export const FAILPOINT_ENV = 'LIFEBOAT_FAULT';

let active: readonly string[] | undefined;

function points(): readonly string[] {
  active ??= (process.env[FAILPOINT_ENV] ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
  return active;
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
