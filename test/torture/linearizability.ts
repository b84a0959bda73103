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
  /**
   * violation: the window's edges (-/+Infinity if not cut there). Its operations invoked before
   * windowFrom or returning after windowUntil may or may not have taken effect inside it.
   */
  windowFrom?: number;
  windowUntil?: number;
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
 *  - if no operation reads or expects the value (not even an open cas), and no failed cas (which can
 *    lean on any value but its `expect`) was still running after it was invoked, having taken effect
 *    or not cannot matter: it is dropped.
 * Both keep the history linearizable exactly when the original is; the first only from a known
 * initial state (from ANY the value may have been there already), so it is skipped then.
 * In a window cut out of a history (see shrink), a definite operation invoked before `from` or
 * returning after `until` overlaps an edge and may have taken effect outside the window: it is
 * relaxed to an open one (a read or failed cas, then constraining nothing, is dropped).
 */
function prepare(ops: readonly Operation[], initial: State = null, from = -Infinity, until = Infinity): Prepared[] {
  const out: Prepared[] = [];
  for (const op of ops) {
    if (op.kind === 'read' && op.result !== 'ok') continue;
    if (op.kind === 'write' && op.result === 'fail') continue;
    let kind: Prepared['kind'] =
      op.kind === 'read' ? 'read' : op.kind === 'write' ? 'write' : op.result === 'ok' ? 'cas-ok' : op.result === 'fail' ? 'cas-fail' : 'cas-maybe';
    const value = op.value ?? null;
    const output = op.output ?? null;
    let definite = op.result !== 'unknown';
    let ret = definite && op.complete !== undefined ? op.complete : Infinity;
    if (!(ret >= op.invoke)) throw new Error(`operation ${op.id}: complete ${op.complete} before invoke ${op.invoke}`);
    if (definite && (op.invoke < from || ret > until)) {
      if (kind === 'read' || kind === 'cas-fail') continue;
      if (kind === 'cas-ok') kind = 'cas-maybe';
      definite = false;
      ret = Infinity;
    }
    out.push({ op, kind, value, valueHash: strHash(value), expect: op.expect ?? null, output, outputHash: strHash(output), call: op.invoke, ret, definite });
  }
  const writers = new Map<string, number>();
  const seenBy = new Map<string, number>(); // value → earliest return of an operation that observed it
  const mentioned = new Set<string | null>(); // values some operation reads or expects (an open cas may have relied on one)
  let lastFailedCas = -Infinity;
  for (const p of out) {
    if ((p.kind === 'write' || p.kind === 'cas-ok' || p.kind === 'cas-maybe') && p.value !== null) writers.set(p.value, (writers.get(p.value) ?? 0) + 1);
    const seen = p.kind === 'read' ? p.output : p.kind === 'cas-ok' ? p.expect : null;
    if (seen !== null) seenBy.set(seen, Math.min(seenBy.get(seen) ?? Infinity, p.ret));
    if (p.kind !== 'write') mentioned.add(p.kind === 'read' ? p.output : p.expect);
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
    return mentioned.has(p.value) || lastFailedCas >= p.call;
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
interface Progress {
  /** Search steps (list entries visited). */
  steps: number;
  /** The latest return any branch reached with everything before it linearized: a violation is witnessed by then. */
  frontier: number;
}

function search(ops: readonly Prepared[], initial: State, deadline: number, counter: Progress): SearchVerdict {
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
      if (ops[node.p].ret > counter.frontier) counter.frontier = ops[node.p].ret;
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
// Shrinking a violation. A window is a list of the key's operations with a start state (absent, or
// ANY once its front is cut) and edges `from`/`until`; it is checked as a history of its own (see
// prepare for the edges) and kept only if it still fails. Each cut or removal is one under which
// "the window fails" implies "the history fails" (a linearization of the history, restricted to
// the window, would linearize it):
//  - a front cut at time T drops the operations that must take effect, and returned, before T, and
//    sets from = T: operations invoked before T then may or may not take effect inside; start ANY;
//  - a back cut at time T drops the operations invoked after T, and sets until = T;
//  - a read or failed cas changes nothing: dropping it from a linearization leaves it valid;
//  - so does dropping a write or cas whose value no other operation reads or expects, while no
//    failed cas is in the window (the value is overwritten before anything looks at it).

interface Window {
  ops: Operation[];
  initial: State;
  from: number;
  until: number;
}

const prepareWindow = (w: Window): Prepared[] => prepare(w.ops, w.initial, w.from, w.until);

function removable(ops: readonly Operation[], op: Operation): boolean {
  if (op.kind === 'read' || (op.kind === 'cas' && op.result === 'fail')) return true;
  if (ops.some((o) => o.kind === 'cas' && o.result === 'fail')) return false;
  const v = op.value ?? null;
  return !ops.some((o) => o !== op && ((o.kind === 'read' && (o.output ?? null) === v) || (o.kind === 'cas' && (o.expect ?? null) === v)));
}

/** Distinct finite values, ascending. */
const times = (ts: number[]): number[] => [...new Set(ts.filter((t) => Number.isFinite(t)))].sort((a, b) => a - b);

/** Windows the search can afford to drop operations from one at a time. */
const SMALL = 400;

/**
 * The least i in [0, n) for which `probe(i)` gives a window, assuming that once it does it does for
 * every greater i; galloping out from `hint`, so the probes stay near it (and cheap when near 0).
 */
function firstFailing(n: number, hint: number, probe: (i: number) => Window | undefined): Window | undefined {
  if (n === 0) return undefined;
  let known: { i: number; w: Window } | undefined; // least index known to fail
  let below = -1; // greatest index known not to fail
  const h = Math.min(Math.max(hint, 0), n - 1);
  const first = probe(h);
  if (first) {
    known = { i: h, w: first };
    for (let step = 1; known.i > 0; step *= 2) {
      const i = Math.max(known.i - step, 0);
      const w = probe(i);
      if (!w) {
        below = i;
        break;
      }
      known = { i, w };
    }
  } else {
    below = h;
    for (let step = 1; ; step *= 2) {
      const i = Math.min(below + step, n - 1);
      const w = probe(i);
      if (w) {
        known = { i, w };
        break;
      }
      below = i;
      if (i === n - 1) return undefined;
    }
  }
  // Between below (not failing, or -1) and known.i (failing): bisect.
  let lo = below + 1;
  let hi = known.i - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const w = probe(mid);
    if (w) {
      known = { i: mid, w };
      hi = mid - 1;
    } else lo = mid + 1;
  }
  return known.w;
}

function shrink(ops: readonly Operation[], searchFrontier: number, deadline: number): Window {
  let frontier = searchFrontier;
  const tidy = (w: Window): Window => ({ ...w, ops: prepareWindow(w).map((p) => p.op) });
  const inTime = (): boolean => performance.now() < deadline;
  const failing = (w: Window): Window | undefined => {
    if (!inTime()) return undefined;
    const t = tidy(w);
    return search(prepareWindow(t), t.initial, deadline, { steps: 0, frontier: -Infinity }) === 'violation' ? t : undefined;
  };
  let window = tidy({ ops: [...ops], initial: null, from: -Infinity, until: Infinity });

  const dropInert = (): void => {
    if (window.ops.length > SMALL) return;
    // Latest first: the last operation is where the window fails.
    for (let i = window.ops.length - 1; i >= 0 && inTime(); i--) {
      // (Tidying after a removal may drop more, such as an open write nobody can observe any more.)
      if (i >= window.ops.length || !removable(window.ops, window.ops[i])) continue;
      const without = failing({ ...window, ops: window.ops.filter((_, j) => j !== i) });
      if (without) window = without;
    }
  };

  for (let round = 0; round < 4 && inTime(); round++) {
    const before = window.ops.length;
    // Back first, so the window ends where the history first fails: the earliest end that still
    // fails (failing there implies failing at every later end), looked for around the search's frontier.
    const ends = times(
      prepareWindow(window)
        .filter((p) => p.definite)
        .map((p) => p.ret),
    );
    const hint = ends.findIndex((t) => t >= frontier);
    const w0 = window;
    window =
      firstFailing(ends.length, hint < 0 ? ends.length - 1 : hint, (i) =>
        failing({ ...w0, ops: w0.ops.filter((o) => o.invoke <= ends[i]), until: Math.min(w0.until, ends[i]) }),
      ) ?? window;
    dropInert();
    // Front: the latest start that still fails (failing there implies failing at every earlier one),
    // trying the small windows first.
    const definite = prepareWindow(window).filter((p) => p.definite);
    const starts = times(definite.map((p) => p.call)).reverse();
    const w1 = window;
    window =
      firstFailing(starts.length, 0, (i) => {
        const t = starts[i];
        const gone = new Set(definite.filter((p) => p.ret < t).map((p) => p.op));
        return failing({ ops: w1.ops.filter((o) => !gone.has(o)), initial: ANY, from: Math.max(w1.from, t), until: w1.until });
      }) ?? window;
    dropInert();
    if (window.ops.length === before) break;
    frontier = Infinity;
  }
  return window;
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
  const counter: Progress = { steps: 0, frontier: -Infinity };
  const undecided: string[] = [];
  let keysChecked = 0;
  for (const key of keys) {
    const ops = prepare(byKey.get(key)!);
    counter.frontier = -Infinity;
    const verdict = performance.now() > deadline ? 'unknown' : search(ops, null, deadline, counter);
    if (verdict === 'unknown') {
      undecided.push(key);
      continue;
    }
    keysChecked++;
    if (verdict === 'violation') {
      const w = shrink(byKey.get(key)!, counter.frontier, performance.now() + (options.shrinkMs ?? timeoutMs));
      const edges = { windowStart: w.initial === ANY ? ('any' as const) : ('absent' as const), windowFrom: w.from, windowUntil: w.until };
      return { verdict, key, window: w.ops, ...edges, explored: counter.steps, keysChecked, undecided, elapsedMs: performance.now() - started };
    }
  }
  const elapsedMs = performance.now() - started;
  if (undecided.length > 0) return { verdict: 'unknown', key: undecided[0], explored: counter.steps, keysChecked, undecided, elapsedMs };
  return { verdict: 'ok', explored: counter.steps, keysChecked, undecided, elapsedMs };
}

const show = (v: string | null | undefined): string => (v === null || v === undefined ? 'absent' : JSON.stringify(v));

/**
 * One line per operation, times in ms from the first invoke, for a file a person reads. Given the
 * CheckResult (or its window fields), first lines say what the register held before the window, and
 * operations overlapping a cut edge of the window are marked '~'.
 */
export function formatWindow(ops: readonly Operation[], context: Pick<CheckResult, 'windowStart' | 'windowFrom' | 'windowUntil'> = {}): string {
  if (ops.length === 0) return '(no operations)\n';
  const sorted = [...ops].sort((a, b) => a.invoke - b.invoke || a.id - b.id);
  const t0 = sorted[0].invoke;
  const ms = (t: number | undefined): string => (t === undefined || !Number.isFinite(t) ? '∞' : (t - t0).toFixed(3)).padStart(10);
  const from = context.windowFrom ?? -Infinity;
  const until = context.windowUntil ?? Infinity;
  const edge = (op: Operation): boolean => op.result !== 'unknown' && (op.invoke < from || (op.complete ?? Infinity) > until);
  const lines: string[] = [];
  if (context.windowStart === 'absent') lines.push('the register is absent before the first operation (this is the start of its history)');
  if (context.windowStart === 'any') lines.push('these operations are not linearizable whatever value the register held before them');
  if (sorted.some(edge)) lines.push('~ = overlaps an edge of the window: may have taken effect outside it, so may or may not count here');
  lines.push(`times in ms from t0 = ${t0.toFixed(3)} (monotonic clock); ∞ = never answered`);
  for (const op of sorted) {
    const span = `[${ms(op.invoke)} .. ${op.result === 'unknown' ? ms(undefined) : ms(op.complete)}]`;
    let what: string;
    if (op.kind === 'read') what = `read  ${op.key} -> ${op.result === 'ok' ? show(op.output) : '?'}`;
    else if (op.kind === 'write') what = `write ${op.key} := ${show(op.value)}`;
    else what = `cas   ${op.key} ${show(op.expect)} -> ${show(op.value)}`;
    lines.push(`${edge(op) ? '~' : ' '}${span}  #${String(op.id).padEnd(6)} ${op.client.padEnd(10)} ${what.padEnd(48)} ${op.result}`);
  }
  return lines.join('\n') + '\n';
}
