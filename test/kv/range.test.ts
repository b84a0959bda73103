import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ErrCompacted, ErrFutureRev } from '../../src/kv/errors.js';
import { SortOrder, SortTarget } from '../../src/kv/types.js';
import { Applier, b, pairs, thrown } from './kvFixture.js';

function abc(): Applier {
  const a = Applier.memory();
  a.put('a', '1'); // rev 2
  a.put('b', '2'); // rev 3
  a.put('c', '3'); // rev 4
  a.put('a', '4'); // rev 5
  return a;
}

describe('Range', () => {
  test('an empty store is at revision 1 and holds nothing', () => {
    const a = Applier.memory();
    const r = a.get('a');
    assert.deepEqual(r, { header: { revision: 1 }, kvs: [], more: false, count: 0 });
  });

  test('a single key returns its latest key-value with revisions and version', () => {
    const r = abc().get('a');
    assert.equal(r.kvs.length, 1);
    const kv = r.kvs[0];
    assert.deepEqual(
      { key: kv.key.toString(), value: kv.value.toString(), create: kv.createRevision, mod: kv.modRevision, version: kv.version, lease: kv.lease },
      { key: 'a', value: '4', create: 2, mod: 5, version: 2, lease: 0n },
    );
    assert.equal(r.count, 1);
    assert.equal(r.header.revision, 5);
  });

  test('range_end selects [key, range_end)', () => {
    assert.deepEqual(pairs(abc().get('a', 'c').kvs), ['a=4', 'b=2']);
  });

  test('range_end "\\0" selects every key from key on', () => {
    assert.deepEqual(pairs(abc().get('b', '\0').kvs), ['b=2', 'c=3']);
  });

  test('key "\\0" with range_end "\\0" selects every key', () => {
    assert.deepEqual(pairs(abc().get('\0', '\0').kvs), ['a=4', 'b=2', 'c=3']);
  });

  test('a range_end at or before the key selects nothing', () => {
    assert.deepEqual(abc().get('b', 'a').kvs, []);
    assert.deepEqual(abc().get('b', 'b').kvs, []);
  });

  test('a single key is not confused with keys it prefixes', () => {
    const a = Applier.memory();
    a.put('k', '1');
    a.put('k\0', '2');
    a.put('kk', '3');
    assert.deepEqual(pairs(a.get('k').kvs), ['k=1']);
  });

  test('limit truncates, sets more, and count stays the total', () => {
    const r = abc().get('\0', '\0', { limit: 2 });
    assert.deepEqual(pairs(r.kvs), ['a=4', 'b=2']);
    assert.equal(r.more, true);
    assert.equal(r.count, 3);
    const all = abc().get('\0', '\0', { limit: 3 });
    assert.equal(all.more, false);
    assert.equal(all.count, 3);
  });

  test('count_only returns the count and no key-values', () => {
    const r = abc().get('a', 'z', { countOnly: true });
    assert.deepEqual(r.kvs, []);
    assert.equal(r.count, 3);
    assert.equal(r.more, false);
  });

  test('keys_only leaves values out but keeps revisions', () => {
    const r = abc().get('a', 'z', { keysOnly: true });
    assert.deepEqual(pairs(r.kvs), ['a=', 'b=', 'c=']);
    assert.equal(r.kvs[0].modRevision, 5);
  });

  test('a historical revision reads the state as of that revision', () => {
    const a = abc();
    a.del('b'); // rev 6
    assert.deepEqual(pairs(a.get('\0', '\0', { revision: 3 }).kvs), ['a=1', 'b=2']);
    assert.deepEqual(pairs(a.get('\0', '\0', { revision: 5 }).kvs), ['a=4', 'b=2', 'c=3']);
    assert.deepEqual(pairs(a.get('\0', '\0', { revision: 6 }).kvs), ['a=4', 'c=3']);
    const at3 = a.get('a', undefined, { revision: 3 });
    assert.equal(at3.kvs[0].version, 1);
    assert.equal(at3.count, 1);
  });

  test('the header carries the current revision, also for historical reads', () => {
    assert.equal(abc().get('a', undefined, { revision: 2 }).header.revision, 5);
  });

  test('historical reads honour limit and count', () => {
    const a = abc();
    a.put('d', '5');
    const r = a.get('\0', '\0', { revision: 4, limit: 2 });
    assert.deepEqual(pairs(r.kvs), ['a=1', 'b=2']);
    assert.equal(r.more, true);
    assert.equal(r.count, 3);
    assert.equal(a.get('\0', '\0', { revision: 4, countOnly: true }).count, 3);
  });

  test('a revision above the current one fails with ErrFutureRev', () => {
    assert.equal(
      thrown(() => abc().get('a', undefined, { revision: 6 })),
      ErrFutureRev,
    );
  });

  test('a revision below the compacted one fails with ErrCompacted', () => {
    const a = abc();
    a.compact(4);
    assert.equal(
      thrown(() => a.get('a', undefined, { revision: 3 })),
      ErrCompacted,
    );
    assert.deepEqual(pairs(a.get('a', undefined, { revision: 4 }).kvs), ['a=1']);
  });

  test('sort by version descending keeps ties in key order (as etcd 3.4 answers)', () => {
    const a = Applier.memory();
    a.put('k1', 'v1');
    a.put('k2', 'v2');
    a.put('k1', 'v1b');
    a.put('k3', 'v3');
    const r = a.get('k', 'l', { sortOrder: SortOrder.Descend, sortTarget: SortTarget.Version });
    assert.deepEqual(pairs(r.kvs), ['k1=v1b', 'k2=v2', 'k3=v3']);
  });

  test('sort by key descending with a limit returns the last keys and more', () => {
    const r = abc().get('\0', '\0', { sortOrder: SortOrder.Descend, limit: 1 });
    assert.deepEqual(pairs(r.kvs), ['c=3']);
    assert.equal(r.more, true);
    assert.equal(r.count, 3);
  });

  test('a non-key sort target without an order sorts ascending', () => {
    const a = Applier.memory();
    a.put('a', 'z');
    a.put('b', 'x');
    a.put('c', 'y');
    assert.deepEqual(pairs(a.get('\0', '\0', { sortTarget: SortTarget.Value }).kvs), ['b=x', 'c=y', 'a=z']);
    assert.deepEqual(pairs(a.get('\0', '\0', { sortTarget: SortTarget.Mod, sortOrder: SortOrder.Descend }).kvs), ['c=y', 'b=x', 'a=z']);
  });

  test('a non-key sort target without an order sorts only the first limit+1 keys (etcd 3.4’s behaviour)', () => {
    const a = Applier.memory();
    a.put('a', 'z');
    a.put('b', 'y');
    a.put('c', 'x');
    // etcd fetches limit+1 keys in key order (a, b), sorts them by value, then truncates.
    const r = a.get('\0', '\0', { sortTarget: SortTarget.Value, limit: 1 });
    assert.deepEqual(pairs(r.kvs), ['b=y']);
    assert.equal(r.more, true);
    const ordered = a.get('\0', '\0', { sortTarget: SortTarget.Value, sortOrder: SortOrder.Ascend, limit: 1 });
    assert.deepEqual(pairs(ordered.kvs), ['c=x'], 'with an order, every key is sorted');
  });

  test('sorting on values with keys_only still sorts by the values', () => {
    const a = Applier.memory();
    a.put('a', 'z');
    a.put('b', 'x');
    const r = a.get('\0', '\0', { sortTarget: SortTarget.Value, keysOnly: true });
    assert.deepEqual(pairs(r.kvs), ['b=', 'a=']);
  });

  test('sort by create revision ascending', () => {
    const a = Applier.memory();
    a.put('b', '1');
    a.put('a', '2');
    a.put('b', '3');
    assert.deepEqual(pairs(a.get('\0', '\0', { sortTarget: SortTarget.Create, sortOrder: SortOrder.Ascend }).kvs), ['b=3', 'a=2']);
  });

  test('mod and create revision filters prune key-values but not count', () => {
    const a = abc(); // a: create 2 mod 5, b: 3/3, c: 4/4
    const f = (opts: object) => pairs(a.get('\0', '\0', opts).kvs);
    assert.deepEqual(f({ minModRevision: 4 }), ['a=4', 'c=3']);
    assert.deepEqual(f({ maxModRevision: 4 }), ['b=2', 'c=3']);
    assert.deepEqual(f({ minCreateRevision: 3 }), ['b=2', 'c=3']);
    assert.deepEqual(f({ maxCreateRevision: 3 }), ['a=4', 'b=2']);
    const r = a.get('\0', '\0', { minModRevision: 4, limit: 1 });
    assert.deepEqual(pairs(r.kvs), ['a=4']);
    assert.equal(r.more, true);
    assert.equal(r.count, 3);
  });

  test('binary keys compare as bytes', () => {
    const a = Applier.memory();
    a.put('\xff', 'high');
    a.put('\x00a', 'low');
    a.put('m', 'mid');
    assert.deepEqual(pairs(a.get('\0', '\0').kvs), ['\x00a=low', 'm=mid', '\xff=high']);
    assert.deepEqual(a.get('\xff').kvs[0].key, b('\xff'));
  });
});
