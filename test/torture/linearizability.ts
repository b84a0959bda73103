// Linearizability checker for a history of independent string registers (read/write/cas per key):
// each key is checked alone (Wing & Gong search with Lowe's list lifting and a cache of
// (linearized set, state)); 'unknown' when the time budget runs out, never a guess of 'ok'.
import type { Operation } from './history.js';

export interface CheckOptions {
  /** Budget for the decision, over all keys (default 10 s). */
  timeoutMs?: number;
  /** Extra budget to shrink a violation to a small window (default: timeoutMs). */
  shrinkMs?: number;
}

export interface CheckResult {
  /** 'unknown': the budget ran out before every key was decided and no violation was found. */
  verdict: 'ok' | 'violation' | 'unknown';
  /** violation: the key whose history is not linearizable; unknown: the first undecided key. */
  key?: string;
  /** violation: a subset of that key's operations (in invoke order) that alone is not linearizable. */
  window?: Operation[];
  /** violation: the register's value before the window — 'absent' (the window starts the key's history) or 'any' (it fails whatever the value). */
  windowStart?: 'absent' | 'any';
  /** Search steps spent deciding (not counting the shrinking). */
  explored: number;
  /** Keys decided (ok or violation). */
  keysChecked: number;
  /** Keys the budget did not suffice for. */
  undecided: string[];
  elapsedMs: number;
}

// ---------------------------------------------------------------------------------------------
// The register model. ANY is "some value we do not know": the state at the start of a window cut
// from the middle of a history. It over-approximates (a failed cas from ANY forgets that the value
// differs from `expect`), so a window that fails from ANY fails from every concrete state.

const ANY = Symbol('any');
type State = string | null | typeof ANY;
const INVALID = Symbol('invalid');

/** An operation ready for the search: normalised and with its return time (+Infinity if open). */
interface Prepared {
  op: Operation;
  kind: 'read' | 'write' | 'cas-ok' | 'cas-fail' | 'cas-maybe';
  value: string | null;
  valueHash: number;
  expect: string | null;
  output: string | null;
  outputHash: number;
  call: number;
  ret: number;
  /** Must be linearized before its return (anything but an 'unknown' result). */
  definite: boolean;
}

function step(s: State, p: Prepared): State | typeof INVALID {
  switch (p.kind) {
    case 'read':
      return s === ANY || s === p.output ? p.output : INVALID;
    case 'write':
      return p.value;
    case 'cas-ok':
      return s === ANY || s === p.expect ? p.value : INVALID;
    case 'cas-fail':
      return s !== p.expect ? s : INVALID;
    case 'cas-maybe':
      // Taking effect or not: "not" is the same as linearizing it after everything else, which the
      // search can always do, so here it takes effect if the compare holds.
      return s === ANY ? ANY : s === p.expect ? p.value : s;
  }
}

function strHash(s: string | null | typeof ANY): number {
  if (s === null) return 0x2545f491;
  if (s === ANY) return 0x6a09e667;
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * Drops what constrains nothing (unknown or failed reads, failed writes), normalises the rest, and
 * closes what it can of the operations left open ('unknown'), which otherwise stay pending to the
 * end and multiply the search: for an open write or cas whose value no other operation writes (nor
 * is the initial absence),
 *  - if some read saw the value, or some cas succeeded expecting it, the operation took effect (a cas
 *    then succeeded) before the earliest of those returned: it becomes definite, returning then;
 *  - if nothing observed the value and no failed cas (which can lean on any value but its `expect`)
 *    was still running after it was invoked, having taken effect or not cannot matter: it is dropped.
 * Both keep the history linearizable exactly when the original is; the first only from a known
 * initial state (from ANY the value may have been there already), so it is skipped then.
 */
function prepare(ops: readonly Operation[], initial: State = null): Prepared[] {
  const out: Prepared[] = [];
  for (const op of ops) {
    if (op.kind === 'read' && op.result !== 'ok') continue;
    if (op.kind === 'write' && op.result === 'fail') continue;
    const kind: Prepared['kind'] = op.kind === 'read' ? 'read' : op.kind === 'write' ? 'write' : op.result === 'ok' ? 'cas-ok' : op.result === 'fail' ? 'cas-fail' : 'cas-maybe';
    const value = op.value ?? null;
    const output = op.output ?? null;
    const definite = op.result !== 'unknown';
    const ret = definite && op.complete !== undefined ? op.complete : Infinity;
    if (!(ret >= op.invoke)) throw new Error(`operation ${op.id}: complete ${op.complete} before invoke ${op.invoke}`);
    out.push({ op, kind, value, valueHash: strHash(value), expect: op.expect ?? null, output, outputHash: strHash(output), call: op.invoke, ret, definite });
  }
  const writers = new Map<string, number>();
  const seenBy = new Map<string, number>(); // value → earliest return of an operation that observed it
  let lastFailedCas = -Infinity;
  for (const p of out) {
    if ((p.kind === 'write' || p.kind === 'cas-ok' || p.kind === 'cas-maybe') && p.value !== null) writers.set(p.value, (writers.get(p.value) ?? 0) + 1);
    const seen = p.kind === 'read' ? p.output : p.kind === 'cas-ok' ? p.expect : null;
    if (seen !== null) seenBy.set(seen, Math.min(seenBy.get(seen) ?? Infinity, p.ret));
    if (p.kind === 'cas-fail') lastFailedCas = Math.max(lastFailedCas, p.ret);
  }
  const kept = out.filter((p) => {
    if (p.definite || p.value === null || writers.get(p.value) !== 1) return true;
    const observed = seenBy.get(p.value);
    if (observed !== undefined) {
      if (initial === ANY) return true;
      p.definite = true;
      p.ret = Math.max(p.call, observed);
      if (p.kind === 'cas-maybe') p.kind = 'cas-ok';
      return true;
    }
    return lastFailedCas >= p.call;
  });
  kept.sort((a, b) => a.call - b.call || a.op.id - b.op.id);
  return kept;
}

// ---------------------------------------------------------------------------------------------
// The set of linearized operations: a bitset with incremental (Zobrist) hashes, whose snapshot
// for the cache keeps only the words between the first not-full one and the last non-zero one
// (the search linearizes roughly in time order, so that span stays about as wide as the concurrency).

class LinSet {
  readonly words: Uint32Array;
  low = 0;
  high = 0;
  h1 = 0;
  h2 = 0;

  constructor(
    n: number,
    private readonly z1: Uint32Array,
    private readonly z2: Uint32Array,
  ) {
    this.words = new Uint32Array(Math.ceil(n / 32) + 1);
  }

  set(i: number): void {
    const w = i >>> 5;
    this.words[w] |= 1 << (i & 31);
    this.h1 ^= this.z1[i];
    this.h2 ^= this.z2[i];
    if (w + 1 > this.high) this.high = w + 1;
    while (this.low < this.words.length && this.words[this.low] === 0xffffffff) this.low++;
  }

  clear(i: number): void {
    const w = i >>> 5;
    this.words[w] &= ~(1 << (i & 31));
    this.h1 ^= this.z1[i];
    this.h2 ^= this.z2[i];
    if (w < this.low) this.low = w;
    while (this.high > 0 && this.words[this.high - 1] === 0) this.high--;
  }

  snapshot(): Uint32Array {
    return this.words.slice(this.low, Math.max(this.low, this.high));
  }

  equals(low: number, span: Uint32Array): boolean {
    if (low !== this.low || span.length !== Math.max(0, this.high - this.low)) return false;
    for (let i = 0; i < span.length; i++) if (span[i] !== this.words[low + i]) return false;
    return true;
  }
}

interface CacheEntry {
  low: number;
  span: Uint32Array;
  state: State;
}

/** Deterministic 32-bit stream for the Zobrist keys (xorshift32). */
function zobrist(n: number, seed: number): Uint32Array {
  const z = new Uint32Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    z[i] = x >>> 0;
  }
  return z;
}

interface Node {
  p: number; // index into the prepared ops; -1 for the head
  call: boolean;
  match: Node | null; // a call's return
  prev: Node | null;
  next: Node | null;
}

type SearchVerdict = 'ok' | 'violation' | 'unknown';

/**
 * Wing & Gong's search over one register's prepared operations: walk the time-ordered list of
 * call/return events, linearize the first pending call whose step is valid and whose resulting
 * (set, state) is new, restart from the head; reaching a return whose call is not linearized means
 * backtracking. Operations that are still open (unknown result) need not be linearized: they can
 * always go last.
 */
function search(ops: readonly Prepared[], initial: State, deadline: number, counter: { steps: number }): SearchVerdict {
  const n = ops.length;
  if (n === 0) return 'ok';
  const events: { t: number; call: boolean; p: number }[] = [];
  for (let i = 0; i < n; i++) {
    events.push({ t: ops[i].call, call: true, p: i });
    events.push({ t: ops[i].ret, call: false, p: i });
  }
  // At equal times calls come first: the operations then count as concurrent (the lenient reading).
  events.sort((a, b) => a.t - b.t || (a.call === b.call ? a.p - b.p : a.call ? -1 : 1));
  const head: Node = { p: -1, call: false, match: null, prev: null, next: null };
  const calls: Node[] = new Array(n);
  let last = head;
  for (const e of events) {
    const node: Node = { p: e.p, call: e.call, match: null, prev: last, next: null };
    last.next = node;
    last = node;
    if (e.call) calls[e.p] = node;
    else calls[e.p].match = node;
  }

  const lifted = new LinSet(n, zobrist(n, 0x9e3779b9), zobrist(n, 0x85ebca6b));
  const cache = new Map<number, CacheEntry[]>();
  const stack: { node: Node; state: State; stateHash: number }[] = [];
  let state = initial;
  let stateHash = strHash(initial);
  let definiteLeft = ops.reduce((k, p) => k + (p.definite ? 1 : 0), 0);
  let entry = head.next;

  const lift = (c: Node): void => {
    c.prev!.next = c.next;
    if (c.next) c.next.prev = c.prev;
    const r = c.match!;
    r.prev!.next = r.next;
    if (r.next) r.next.prev = r.prev;
  };
  const unlift = (c: Node): void => {
    const r = c.match!;
    r.prev!.next = r;
    if (r.next) r.next.prev = r;
    c.prev!.next = c;
    if (c.next) c.next.prev = c;
  };

  while (definiteLeft > 0) {
    if ((++counter.steps & 0xff) === 0 && performance.now() > deadline) return 'unknown';
    const node = entry!;
    if (node.call) {
      const p = ops[node.p];
      const next = step(state, p);
      if (next !== INVALID) {
        const nextHash = next === state ? stateHash : next === p.value ? p.valueHash : next === p.output ? p.outputHash : strHash(next);
        lifted.set(node.p);
        const key = ((lifted.h1 ^ nextHash) >>> 0) * 0x200000 + ((lifted.h2 ^ Math.imul(nextHash, 0x27d4eb2d)) >>> 11);
        let bucket = cache.get(key);
        const seen = bucket?.some((e) => e.state === next && lifted.equals(e.low, e.span)) ?? false;
        if (!seen) {
          if (!bucket) cache.set(key, (bucket = []));
          bucket.push({ low: lifted.low, span: lifted.snapshot(), state: next });
          stack.push({ node, state, stateHash });
          state = next;
          stateHash = nextHash;
          if (p.definite) definiteLeft--;
          lift(node);
          entry = head.next;
          continue;
        }
        lifted.clear(node.p);
      }
      entry = node.next;
    } else {
      // A return whose call is still pending: this branch cannot be completed.
      const top = stack.pop();
      if (!top) return 'violation';
      state = top.state;
      stateHash = top.stateHash;
      lifted.clear(top.node.p);
      if (ops[top.node.p].definite) definiteLeft++;
      unlift(top.node);
      entry = top.node.next;
    }
  }
  return 'ok';
}

// ---------------------------------------------------------------------------------------------
// Shrinking a violation. A window is a list of the key's operations, checked as a history of its
// own (prepared afresh), and kept only if it still fails; each cut or removal is one under which
// failing proves the whole history fails:
//  - a front cut drops definite operations that all returned before every kept definite operation
//    was invoked (open operations are kept: they may have taken effect inside the window); the
//    window then starts from ANY;
//  - a back cut drops every operation invoked after all kept definite operations returned;
//  - a read or failed cas changes nothing, so dropping it from any linearization leaves it valid;
//  - so does dropping a write or cas whose value no other operation observes, while no failed cas
//    is in the window (the value is overwritten before anything looks).

function quiescentCuts(ops: readonly Prepared[]): number[] {
  // Indices i into the definite operations (in invoke order) where all of def[0..i) returned before def[i] was invoked.
  const def = ops.filter((p) => p.definite);
  const cuts: number[] = [];
  let maxRet = -Infinity;
  for (let i = 0; i < def.length; i++) {
    if (i > 0 && maxRet < def[i].call) cuts.push(i);
    maxRet = Math.max(maxRet, def[i].ret);
  }
  return cuts;
}

function frontCut(ops: readonly Prepared[], i: number): Operation[] {
  const dropped = new Set(ops.filter((p) => p.definite).slice(0, i));
  return ops.filter((p) => !dropped.has(p)).map((p) => p.op);
}

function backCut(ops: readonly Prepared[], i: number): Operation[] {
  const def = ops.filter((p) => p.definite);
  let maxRet = -Infinity;
  for (let k = 0; k < i; k++) maxRet = Math.max(maxRet, def[k].ret);
  return ops.filter((p) => p.call <= maxRet).map((p) => p.op);
}

function removable(window: readonly Operation[], op: Operation): boolean {
  if (op.kind === 'read' || (op.kind === 'cas' && op.result === 'fail')) return true;
  if (window.some((o) => o.kind === 'cas' && o.result === 'fail')) return false;
  const v = op.value ?? null;
  return !window.some((o) => o !== op && ((o.kind === 'read' && o.result === 'ok' && (o.output ?? null) === v) || (o.kind === 'cas' && o.result === 'ok' && (o.expect ?? null) === v)));
}

function shrink(ops: readonly Operation[], deadline: number): { window: Operation[]; initial: State } {
  let initial: State = null;
  let window = prepare(ops, initial).map((p) => p.op);
  const fails = (w: readonly Operation[], init: State): boolean => search(prepare(w, init), init, deadline, { steps: 0 }) === 'violation';

  // Operations that can go, one at a time, latest first (the last one is where it fails).
  const dropInert = (): void => {
    for (let i = window.length - 1; i >= 0 && performance.now() < deadline; i--) {
      if (!removable(window, window[i])) continue;
      const without = window.filter((_, j) => j !== i);
      if (fails(without, initial)) window = without;
    }
  };

  for (let round = 0; round < 4 && performance.now() < deadline; round++) {
    const before = window.length;
    // Back first, so the window ends where the history first fails: the earliest cut that still fails.
    let prepared = prepare(window, initial);
    let cuts = quiescentCuts(prepared);
    let lo = 0;
    let hi = cuts.length - 1;
    let best: Operation[] | undefined;
    while (lo <= hi && performance.now() < deadline) {
      const mid = (lo + hi) >> 1;
      const candidate = backCut(prepared, cuts[mid]);
      if (fails(candidate, initial)) {
        best = candidate;
        hi = mid - 1;
      } else lo = mid + 1;
    }
    if (best) window = best;
    dropInert();
    // Front: the latest cut that still fails (failing at a cut implies failing at every earlier one).
    prepared = prepare(window, initial);
    cuts = quiescentCuts(prepared);
    lo = 0;
    hi = cuts.length - 1;
    best = undefined;
    while (lo <= hi && performance.now() < deadline) {
      const mid = (lo + hi) >> 1;
      const candidate = frontCut(prepared, cuts[mid]);
      if (fails(candidate, ANY)) {
        best = candidate;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (best) {
      window = best;
      initial = ANY;
    }
    dropInert();
    if (window.length === before) break;
  }
  return { window: prepare(window, initial).map((p) => p.op), initial };
}

// ---------------------------------------------------------------------------------------------

/** Checks that the history is linearizable as one register per key (initially absent). */
export function check(history: readonly Operation[], options: CheckOptions = {}): CheckResult {
  const started = performance.now();
  const timeoutMs = options.timeoutMs ?? 10_000;
  const deadline = started + timeoutMs;
  const byKey = new Map<string, Operation[]>();
  for (const op of history) {
    let ops = byKey.get(op.key);
    if (!ops) byKey.set(op.key, (ops = []));
    ops.push(op);
  }
  // Small keys first: a violation there is cheap to find, and a large key that exhausts the budget
  // leaves fewer keys undecided.
  const keys = [...byKey.keys()].sort((a, b) => byKey.get(a)!.length - byKey.get(b)!.length || (a < b ? -1 : a > b ? 1 : 0));
  const counter = { steps: 0 };
  const undecided: string[] = [];
  let keysChecked = 0;
  for (const key of keys) {
    const ops = prepare(byKey.get(key)!);
    const verdict = performance.now() > deadline ? 'unknown' : search(ops, null, deadline, counter);
    if (verdict === 'unknown') {
      undecided.push(key);
      continue;
    }
    keysChecked++;
    if (verdict === 'violation') {
      const { window, initial } = shrink(byKey.get(key)!, performance.now() + (options.shrinkMs ?? timeoutMs));
      const windowStart = initial === ANY ? 'any' : 'absent';
      return { verdict, key, window, windowStart, explored: counter.steps, keysChecked, undecided, elapsedMs: performance.now() - started };
    }
  }
  const elapsedMs = performance.now() - started;
  if (undecided.length > 0) return { verdict: 'unknown', key: undecided[0], explored: counter.steps, keysChecked, undecided, elapsedMs };
  return { verdict: 'ok', explored: counter.steps, keysChecked, undecided, elapsedMs };
}

const show = (v: string | null | undefined): string => (v === null || v === undefined ? 'absent' : JSON.stringify(v));

/**
 * One line per operation, times in ms from the first invoke, for a file a person reads; with
 * `start` (CheckResult.windowStart) a first line says what the register held before the window.
 */
export function formatWindow(ops: readonly Operation[], start?: 'absent' | 'any'): string {
  if (ops.length === 0) return '(no operations)\n';
  const sorted = [...ops].sort((a, b) => a.invoke - b.invoke || a.id - b.id);
  const t0 = sorted[0].invoke;
  const ms = (t: number | undefined): string => (t === undefined || !Number.isFinite(t) ? '∞' : (t - t0).toFixed(3)).padStart(10);
  const lines: string[] = [];
  if (start === 'absent') lines.push('the register is absent before the first operation (this is the start of its history)');
  if (start === 'any') lines.push('these operations are not linearizable whatever value the register held before them');
  lines.push(`times in ms from t0 = ${t0.toFixed(3)} (monotonic clock); ∞ = never answered`);
  for (const op of sorted) {
    const span = `[${ms(op.invoke)} .. ${op.result === 'unknown' ? ms(undefined) : ms(op.complete)}]`;
    let what: string;
    if (op.kind === 'read') what = `read  ${op.key} -> ${op.result === 'ok' ? show(op.output) : '?'}`;
    else if (op.kind === 'write') what = `write ${op.key} := ${show(op.value)}`;
    else what = `cas   ${op.key} ${show(op.expect)} -> ${show(op.value)}`;
    lines.push(`${span}  #${String(op.id).padEnd(6)} ${op.client.padEnd(10)} ${what.padEnd(48)} ${op.result}`);
  }
  return lines.join('\n') + '\n';
}
