// The linearizability checker must accept every history a real register could produce (with any
// concurrency and any unknown outcomes) and reject the anomalies a broken cluster shows, naming the
// key and a window that contains the offending operations; out of budget it says 'unknown'.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Rng } from '../sim/rng.js';
import { HistoryRecorder, type Operation, type OpResult } from './history.js';
import { check, formatWindow } from './linearizability.js';

let nextId = 1;
const w = (key: string, value: string | undefined, invoke: number, complete: number | undefined, result: OpResult = 'ok'): Operation => ({
  id: nextId++,
  client: `c${nextId % 7}`,
  kind: 'write',
  key,
  value,
  invoke,
  complete,
  result,
});
const r = (key: string, output: string | null, invoke: number, complete: number, result: OpResult = 'ok'): Operation => ({
  id: nextId++,
  client: `c${nextId % 7}`,
  kind: 'read',
  key,
  invoke,
  complete,
  result,
  output,
});
const cas = (key: string, expect: string | undefined, value: string, invoke: number, complete: number | undefined, result: OpResult): Operation => ({
  id: nextId++,
  client: `c${nextId % 7}`,
  kind: 'cas',
  key,
  expect,
  value,
  invoke,
  complete,
  result,
});

const ids = (ops: readonly Operation[] | undefined): number[] => (ops ?? []).map((o) => o.id);

test('a sequential history (writes, reads, cas that holds and cas that fails, delete) is linearizable', () => {
  const h = [
    r('x', null, 0, 1),
    cas('x', undefined, 'a', 2, 3, 'ok'),
    r('x', 'a', 4, 5),
    cas('x', 'zzz', 'c', 6, 7, 'fail'),
    cas('x', 'a', 'b', 8, 9, 'ok'),
    r('x', 'b', 10, 11),
    w('x', undefined, 12, 13),
    r('x', null, 14, 15),
    w('x', 'd', 16, 17, 'fail'),
    r('x', null, 18, 19),
  ];
  assert.equal(check(h).verdict, 'ok');
  // The same history with the last read seeing the failed write is not.
  const bad = [...h.slice(0, -1), r('x', 'd', 18, 19)];
  assert.equal(check(bad).verdict, 'violation');
});

test('a read concurrent with a write may see the old or the new value, but nothing else', () => {
  for (const seen of ['a', 'b']) {
    const res = check([w('x', 'a', 0, 1), w('x', 'b', 2, 10), r('x', seen, 3, 4)]);
    assert.equal(res.verdict, 'ok', `read saw ${seen}`);
  }
  assert.equal(check([w('x', 'a', 0, 1), w('x', 'b', 2, 10), r('x', 'c', 3, 4)]).verdict, 'violation');
});

test('a stale read after a completed write is a violation, and the window holds the write and the read', () => {
  const w1 = w('x', 'a', 0, 1);
  const w2 = w('x', 'b', 2, 3);
  const stale = r('x', 'a', 4, 5);
  const res = check([w1, r('x', 'a', 1.5, 1.8), w2, r('x', 'b', 3.5, 3.8), stale, r('x', 'b', 6, 7)]);
  assert.equal(res.verdict, 'violation');
  assert.equal(res.key, 'x');
  assert.ok(ids(res.window).includes(w2.id), formatWindow(res.window!, res));
  assert.ok(ids(res.window).includes(stale.id), formatWindow(res.window!, res));
  assert.ok(res.window!.length <= 3, formatWindow(res.window!, res));
});

test('a lost acknowledged write (later reads never see it, no other write) is a violation', () => {
  const lost = w('x', 'a', 0, 1);
  const res = check([w('y', 'q', 0, 1), lost, r('x', null, 2, 3), r('y', 'q', 2, 3), r('x', null, 4, 5)]);
  assert.equal(res.verdict, 'violation');
  assert.equal(res.key, 'x');
  assert.ok(ids(res.window).includes(lost.id));
  // Had the write been concurrent with the first read, that read could precede it; the second cannot.
  assert.equal(check([w('x', 'a', 0, 2.5), r('x', null, 2, 3), r('x', 'a', 4, 5)]).verdict, 'ok');
});

test('a cas that succeeded from a value the register never had is a violation', () => {
  const bogus = cas('x', 'b', 'c', 2, 3, 'ok');
  const res = check([w('x', 'a', 0, 1), bogus, r('x', 'c', 4, 5)]);
  assert.equal(res.verdict, 'violation');
  assert.ok(ids(res.window).includes(bogus.id));
  // From a value it did have, it is fine; and a cas that failed although the value matched is not.
  assert.equal(check([w('x', 'a', 0, 1), cas('x', 'a', 'c', 2, 3, 'ok'), r('x', 'c', 4, 5)]).verdict, 'ok');
  assert.equal(check([w('x', 'a', 0, 1), cas('x', 'a', 'c', 2, 3, 'fail'), r('x', 'a', 4, 5)]).verdict, 'violation');
});

test("an 'unknown' write may take effect late (a read sees it long after its invoke)", () => {
  const h = [w('x', 'a', 0, 1), w('x', 'b', 2, 2.5, 'unknown'), r('x', 'a', 3, 4), r('x', 'a', 5, 6), r('x', 'b', 10, 11), r('x', 'b', 12, 13)];
  assert.equal(check(h).verdict, 'ok');
  // Once seen it stays: a later read of the old value is a violation.
  assert.equal(check([...h, r('x', 'a', 14, 15)]).verdict, 'violation');
  // An unknown cas likewise.
  assert.equal(check([w('x', 'a', 0, 1), cas('x', 'a', 'b', 2, undefined, 'unknown'), r('x', 'a', 3, 4), r('x', 'b', 9, 10)]).verdict, 'ok');
});

test("an 'unknown' write that never took effect is fine", () => {
  assert.equal(check([w('x', 'a', 0, 1), w('x', 'b', 2, undefined, 'unknown'), r('x', 'a', 10, 11), r('x', 'a', 20, 21)]).verdict, 'ok');
  assert.equal(check([w('x', 'b', 2, undefined, 'unknown'), r('x', null, 10, 11)]).verdict, 'ok');
  // An 'unknown' read constrains nothing, whatever it carries.
  assert.equal(check([w('x', 'a', 0, 1), r('x', 'nonsense', 2, 3, 'unknown')]).verdict, 'ok');
});

test('many keys are checked independently: a violation on one key is found and named', () => {
  const h: Operation[] = [];
  for (let k = 0; k < 10; k++) {
    const key = `k${k}`;
    h.push(w(key, 'a', 0, 1), r(key, 'a', 2, 3), w(key, 'b', 4, 6), r(key, 'a', 5, 5.5), r(key, 'b', 7, 8));
  }
  assert.equal(check(h).verdict, 'ok');
  // Each key alone is fine, and a read of k3's value under k7 cannot borrow from k3.
  const stale = r('k7', 'a', 9, 10);
  const res = check([...h, stale]);
  assert.equal(res.verdict, 'violation');
  assert.equal(res.key, 'k7');
  assert.ok(res.window!.every((o) => o.key === 'k7'));
  assert.ok(ids(res.window).includes(stale.id));
});

/**
 * A real register under random concurrency: each operation takes effect at a random instant
 * between its invoke and its completion, in that order per key; some writes and cas time out
 * ('unknown', taking effect or not), some writes fail cleanly (not applied).
 */
function simulate(seed: number, count: number, keys: number, clients: number): Operation[] {
  const rng = new Rng(seed);
  type Sim = Operation & { at: number; applied: boolean };
  const ops: Sim[] = [];
  const written = new Map<string, string[]>();
  const perClient = Math.ceil(count / clients);
  for (let c = 0; c < clients; c++) {
    let t = rng.next() * 3;
    for (let i = 0; i < perClient && ops.length < count; i++) {
      const key = `k${rng.int(keys)}`;
      const invoke = t;
      const at = invoke + rng.next() * rng.pick([0.2, 1, 4]);
      const complete = at + rng.next() * rng.pick([0.2, 1, 4]);
      const roll = rng.next();
      const base = { id: 0, client: `c${c}`, key, invoke, complete, at, applied: true };
      const vals = written.get(key) ?? [];
      let op: Sim;
      if (roll < 0.5) op = { ...base, kind: 'read', result: rng.chance(0.02) ? 'unknown' : 'ok' };
      else {
        const value = `${key}:v${ops.length}`;
        written.set(key, [...vals, value]);
        const result: OpResult = rng.chance(0.05) ? 'unknown' : 'ok';
        if (roll < 0.8) op = { ...base, kind: 'write', value, result: rng.chance(0.03) ? 'fail' : result };
        else op = { ...base, kind: 'cas', value, expect: vals.length === 0 || rng.chance(0.1) ? undefined : rng.pick(vals.slice(-3)), result };
        if (op.result === 'fail' || (op.result === 'unknown' && rng.chance(0.5))) op.applied = false;
      }
      if (op.result === 'unknown') {
        delete op.complete;
        t = at + 5 + rng.next() * 3; // the client gave up and moved on
      } else t = complete + rng.next() * 2;
      ops.push(op);
    }
  }
  const state = new Map<string, string | null>();
  for (const op of [...ops].sort((a, b) => a.at - b.at)) {
    const cur = state.get(op.key) ?? null;
    if (op.kind === 'read') {
      if (op.result === 'ok') op.output = cur;
    } else if (op.kind === 'write') {
      if (op.applied) state.set(op.key, op.value!);
    } else if (cur === (op.expect ?? null)) {
      if (op.applied) state.set(op.key, op.value!);
    } else if (op.result === 'ok') op.result = 'fail';
  }
  ops.sort((a, b) => a.invoke - b.invoke);
  return ops.map(({ at: _at, applied: _applied, ...op }, i) => ({ ...op, id: i }));
}

/** Points one read at a value that was overwritten (by a write that completed) before the read began. */
function makeStale(h: Operation[]): Operation {
  const applied = (o: Operation): boolean => o.result === 'ok' && (o.kind === 'write' || o.kind === 'cas');
  for (const read of h.slice(h.length >> 1)) {
    if (read.kind !== 'read' || read.result !== 'ok') continue;
    const before = h.filter((o) => o.key === read.key && applied(o) && o.complete! < read.invoke);
    for (const old of before) {
      if (old.value === read.output) continue;
      if (before.some((o2) => o2.invoke > old.complete! && o2.value !== old.value)) {
        read.output = old.value;
        return read;
      }
    }
  }
  throw new Error('no read to make stale');
}

test('a large random history of a real register (2000 ops, 10 keys) is found linearizable within a few seconds', () => {
  for (const seed of [1, 2, 3]) {
    const h = simulate(seed, 2000, 10, 12);
    assert.ok(h.some((o) => o.result === 'unknown') && h.some((o) => o.kind === 'cas' && o.result === 'fail'));
    const res = check(h, { timeoutMs: 10_000 });
    assert.equal(res.verdict, 'ok', `seed ${seed}: ${res.verdict} on ${res.key}\n${res.window ? formatWindow(res.window) : ''}`);
    assert.equal(res.keysChecked, 10);
    assert.ok(res.elapsedMs < 5000, `took ${res.elapsedMs} ms`);
  }
});

test('the same history with one read turned stale is a violation, and the window holds that read', () => {
  for (const seed of [1, 2, 3]) {
    const h = simulate(seed, 2000, 10, 12);
    const stale = makeStale(h);
    const res = check(h, { timeoutMs: 10_000 });
    assert.equal(res.verdict, 'violation', `seed ${seed}`);
    assert.equal(res.key, stale.key);
    assert.ok(ids(res.window).includes(stale.id), formatWindow(res.window!, res));
    assert.ok(res.window!.length < 20, `window of ${res.window!.length}:\n${formatWindow(res.window!, res)}`);
  }
});

test("a budget too small to decide returns 'unknown', never 'ok'", () => {
  // 40 overlapping writes and a read of a value none wrote: refuting it means trying the orders.
  const h: Operation[] = [];
  for (let i = 0; i < 40; i++) h.push(w('x', `v${i}`, i * 0.01, 100 + i * 0.01));
  h.push(r('x', 'never', 200, 201), w('y', 'a', 0, 1), r('y', 'a', 2, 3));
  const res = check(h, { timeoutMs: 50 });
  assert.equal(res.verdict, 'unknown');
  assert.equal(res.key, 'x');
  assert.deepEqual(res.undecided, ['x']);
  assert.equal(res.keysChecked, 1);
  // Without the hopeless read, the same writes are decided at once.
  assert.equal(
    check(
      h.filter((o) => o.output !== 'never'),
      { timeoutMs: 1000 },
    ).verdict,
    'ok',
  );
});

test('formatWindow prints one line per operation with times from the first invoke', () => {
  const text = formatWindow([r('x', 'a', 12.5, 13), w('x', 'a', 10, 11), cas('x', 'a', 'b', 11.25, undefined, 'unknown')]);
  const lines = text.trimEnd().split('\n');
  assert.equal(lines.length, 4);
  assert.match(lines[1], /\[\s+0\.000 \.\.\s+1\.000\].*write x := "a"\s+ok$/);
  assert.match(lines[2], /\[\s+1\.250 \.\.\s+∞\].*cas\s+x "a" -> "b"\s+unknown$/);
  assert.match(lines[3], /read\s+x -> "a"/);
});

test('the recorder times each call and leaves calls never answered as unknown', async () => {
  let now = 0;
  const rec = new HistoryRecorder(() => now);
  const done = rec.invoke('c1', { kind: 'write', key: 'x', value: 'a' });
  now = 5;
  assert.equal(done({ result: 'ok' }), true);
  assert.equal(done({ result: 'fail' }), false);
  rec.invoke('c2', { kind: 'cas', key: 'x', expect: 'a', value: 'b' });
  now = 7;
  await rec.run(
    'c3',
    { kind: 'read', key: 'x' },
    () => Promise.resolve('a'),
    (v) => ({ result: 'ok', output: v }),
  );
  await rec.run(
    'c4',
    { kind: 'read', key: 'x' },
    () => Promise.reject(new Error('timeout')),
    () => ({ result: 'ok' }),
  );
  const h = rec.history();
  assert.deepEqual(
    h.map((o) => [o.client, o.result, o.invoke, o.complete, o.output]),
    [
      ['c1', 'ok', 0, 5, undefined],
      ['c2', 'unknown', 5, undefined, undefined],
      ['c3', 'ok', 7, 7, 'a'],
      ['c4', 'unknown', 7, undefined, undefined],
    ],
  );
  assert.equal(check(h).verdict, 'ok');
});

/** Tries every order (and every subset of the open operations) of a one-key history. */
function bruteForce(h: readonly Operation[], initial: string | null): boolean {
  const ops = h.filter((o) => !(o.kind === 'read' && o.result !== 'ok') && !(o.kind === 'write' && o.result === 'fail'));
  const end = (o: Operation): number => (o.result === 'unknown' || o.complete === undefined ? Infinity : o.complete);
  const used = new Array<boolean>(ops.length).fill(false);
  const go = (state: string | null, placed: number): boolean => {
    if (ops.every((o, i) => used[i] || o.result === 'unknown')) return true;
    for (let i = 0; i < ops.length; i++) {
      if (used[i]) continue;
      // Everything that returned before this one was invoked must already be placed.
      if (ops.some((o, j) => !used[j] && j !== i && end(o) < ops[i].invoke)) continue;
      const o = ops[i];
      let next: string | null | undefined;
      if (o.kind === 'read') next = o.output === state ? state : undefined;
      else if (o.kind === 'write') next = o.value ?? null;
      else if (o.result === 'ok') next = state === (o.expect ?? null) ? o.value! : undefined;
      else if (o.result === 'fail') next = state !== (o.expect ?? null) ? state : undefined;
      else next = state === (o.expect ?? null) ? o.value! : state;
      if (next === undefined) continue;
      used[i] = true;
      const ok = go(next, placed + 1);
      used[i] = false;
      if (ok) return true;
    }
    return false;
  };
  return go(initial, 0);
}

test('the checker agrees with brute force on small random histories, and every window alone fails from the start it names', () => {
  const rng = new Rng(42);
  let violations = 0;
  for (let n = 0; n < 6000; n++) {
    // Few values (so writes repeat them) or many (so most are unique, which prepare exploits).
    const vals = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].slice(0, rng.pick([2, 3, 8]));
    const h: Operation[] = [];
    const size = rng.between(2, 7);
    // Reads and cas mostly name values already written, so open operations get observed.
    const written: string[] = [];
    const some = (): string => (written.length > 0 && rng.chance(0.7) ? rng.pick(written) : rng.pick(vals));
    const fresh = (): string => {
      const v = rng.pick(vals);
      written.push(v);
      return v;
    };
    for (let i = 0; i < size; i++) {
      const invoke = rng.int(10);
      const complete = invoke + rng.int(4); // integer times: ties between one's return and another's call happen
      const result = rng.weighted<OpResult>([
        ['ok', 6],
        ['fail', 1],
        ['unknown', 1],
      ])!;
      const kind = rng.pick(['read', 'write', 'cas'] as const);
      if (kind === 'read') h.push(r('x', rng.chance(0.2) ? null : some(), invoke, complete, result));
      else if (kind === 'write') h.push(w('x', fresh(), invoke, result === 'unknown' ? undefined : complete, result));
      else h.push(cas('x', rng.chance(0.2) ? undefined : some(), fresh(), invoke, result === 'unknown' ? undefined : complete, result));
    }
    const res = check(h);
    const expected = bruteForce(h, null);
    assert.equal(res.verdict, expected ? 'ok' : 'violation', formatWindow(h));
    if (res.verdict === 'violation') {
      violations++;
      // As the window claims: operations overlapping its edges may or may not have taken effect in it.
      const from = res.windowFrom ?? -Infinity;
      const until = res.windowUntil ?? Infinity;
      const relaxed = res.window!.map((o) =>
        o.result !== 'unknown' && (o.invoke < from || (o.complete ?? Infinity) > until) ? { ...o, result: 'unknown' as const } : o,
      );
      const starts = res.windowStart === 'any' ? [null, ...vals] : [null];
      for (const start of starts)
        assert.equal(bruteForce(relaxed, start), false, `window from ${start}:\n${formatWindow(res.window!, res)}of\n${formatWindow(h)}`);
    }
  }
  assert.ok(violations > 300, `only ${violations} violations among the random histories`);
});
