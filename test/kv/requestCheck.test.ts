import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ErrDuplicateKey, ErrEmptyKey, ErrKeyNotFound, ErrLeaseProvided, ErrTooManyOps, ErrValueProvided, EtcdError } from '../../src/api/errors.js';
import { GrpcCode } from '../../src/net/grpcCode.js';
import { checkPutRequest, checkRangeRequest, checkTxnRequest } from '../../src/api/requestCheck.js';
import type { RequestOp, TxnRequest } from '../../src/kv/types.js';
import { b, thrown } from './kvFixture.js';

const put = (k: string): RequestOp => ({ requestPut: { key: b(k), value: b('v') } });
const del = (k: string, end?: string): RequestOp => ({ requestDeleteRange: { key: b(k), ...(end !== undefined ? { rangeEnd: b(end) } : {}) } });
const txn = (t: TxnRequest): RequestOp => ({ requestTxn: t });

describe('Request checks (API layer)', () => {
  test('an empty key is refused with ErrEmptyKey', () => {
    assert.equal(
      thrown(() => checkRangeRequest({ key: b('') })),
      ErrEmptyKey,
    );
    assert.equal(
      thrown(() => checkPutRequest({ key: b('') })),
      ErrEmptyKey,
    );
    assert.equal(
      thrown(() => checkTxnRequest({ compare: [{ key: b(''), result: 0, target: 0 }] })),
      ErrEmptyKey,
    );
  });

  test('ignore_value with a value, or ignore_lease with a lease, is refused', () => {
    assert.equal(
      thrown(() => checkPutRequest({ key: b('k'), value: b('v'), ignoreValue: true })),
      ErrValueProvided,
    );
    assert.equal(
      thrown(() => checkPutRequest({ key: b('k'), lease: 5n, ignoreLease: true })),
      ErrLeaseProvided,
    );
  });

  test('more than max-txn-ops operations in a branch is refused', () => {
    const ops = Array.from({ length: 129 }, (_, i) => put(`k${i}`));
    assert.equal(
      thrown(() => checkTxnRequest({ success: ops })),
      ErrTooManyOps,
    );
    checkTxnRequest({ success: ops.slice(0, 128) });
    assert.equal(
      thrown(() => checkTxnRequest({ success: ops.slice(0, 3) }, 2)),
      ErrTooManyOps,
    );
  });

  test('an empty op is refused as etcd refuses it', () => {
    assert.equal(
      thrown(() => checkTxnRequest({ success: [{} as RequestOp] })),
      ErrKeyNotFound,
    );
  });

  test('the same key put twice in a branch is a duplicate', () => {
    assert.equal(
      thrown(() => checkTxnRequest({ success: [put('a'), put('a')] })),
      ErrDuplicateKey,
    );
    checkTxnRequest({ success: [put('a')], failure: [put('a')] });
  });

  test('a put inside a deleted range of the same branch is a duplicate', () => {
    assert.equal(
      thrown(() => checkTxnRequest({ success: [del('a', 'c'), put('b')] })),
      ErrDuplicateKey,
    );
    assert.equal(
      thrown(() => checkTxnRequest({ success: [del('b'), put('b')] })),
      ErrDuplicateKey,
    );
    checkTxnRequest({ success: [del('a', 'c'), put('c')] });
  });

  test('nested txns: both branches may put the same key, but not a key the parent writes', () => {
    checkTxnRequest({ success: [txn({ success: [put('a')], failure: [put('a')] })] });
    assert.equal(
      thrown(() => checkTxnRequest({ success: [put('a'), txn({ success: [put('a')] })] })),
      ErrDuplicateKey,
    );
    assert.equal(
      thrown(() => checkTxnRequest({ success: [del('a', 'z'), txn({ failure: [put('m')] })] })),
      ErrDuplicateKey,
    );
  });

  test('etcd errors carry their gRPC code and exact text', () => {
    assert.ok(ErrDuplicateKey instanceof EtcdError);
    assert.equal(ErrDuplicateKey.code, GrpcCode.InvalidArgument);
    assert.equal(ErrDuplicateKey.message, 'etcdserver: duplicate key given in txn request');
    assert.ok(ErrDuplicateKey.is(new Error('etcdserver: duplicate key given in txn request')));
  });
});
