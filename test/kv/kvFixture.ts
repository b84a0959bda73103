// Shared helpers for the KV tests: temporary stores and a terse way to apply
// requests as consecutive log entries.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import type { KvError as EtcdError } from '../../src/kv/errors.js';
import { KvStore } from '../../src/kv/kvStore.js';
import type {
  DeleteRangeRequest,
  DeleteRangeResponse,
  KeyValue,
  KvRequest,
  KvResponse,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  TxnRequest,
  TxnResponse,
} from '../../src/kv/types.js';

export const b = (s: string): Buffer => Buffer.from(s, 'latin1');

/** A directory removed when the test file ends. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'lifeboat-kv-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A store plus an entry counter: each call is the next log entry. */
export class Applier {
  constructor(readonly kv: KvStore) {}

  static memory(): Applier {
    const a = new Applier(KvStore.open(':memory:'));
    after(() => a.kv.close());
    return a;
  }

  static file(dir = tempDir(), name = 'kv.db'): Applier {
    const a = new Applier(KvStore.open(join(dir, name)));
    after(() => a.kv.close());
    return a;
  }

  /** Applies the request as the next entry; returns the response or the etcd error. */
  apply(req: KvRequest): { response?: KvResponse; error?: EtcdError } {
    return this.kv.applyRequest(this.kv.appliedIndex() + 1, Math.max(1, this.kv.appliedTerm()), req);
  }

  ok(req: KvRequest): KvResponse {
    const r = this.apply(req);
    if (r.error) throw new Error(`unexpected etcd error: ${r.error.message}`);
    return r.response!;
  }

  err(req: KvRequest): EtcdError {
    const r = this.apply(req);
    if (!r.error) throw new Error(`expected an etcd error, got ${JSON.stringify(Object.keys(r.response ?? {}))}`);
    return r.error;
  }

  put(key: string, value: string, opts: Omit<PutRequest, 'key' | 'value'> = {}): PutResponse {
    return (this.ok({ put: { key: b(key), value: b(value), ...opts } }) as { put: PutResponse }).put;
  }

  del(key: string, rangeEnd?: string, opts: Omit<DeleteRangeRequest, 'key' | 'rangeEnd'> = {}): DeleteRangeResponse {
    const req: DeleteRangeRequest = { key: b(key), ...opts };
    if (rangeEnd !== undefined) req.rangeEnd = b(rangeEnd);
    return (this.ok({ deleteRange: req }) as { deleteRange: DeleteRangeResponse }).deleteRange;
  }

  txn(t: TxnRequest): TxnResponse {
    return (this.ok({ txn: t }) as { txn: TxnResponse }).txn;
  }

  /** A serializable read (not a log entry). */
  get(key: string, rangeEnd?: string, opts: Omit<RangeRequest, 'key' | 'rangeEnd'> = {}): RangeResponse {
    const req: RangeRequest = { key: b(key), ...opts };
    if (rangeEnd !== undefined) req.rangeEnd = b(rangeEnd);
    return this.kv.range(req);
  }

  compact(revision: number): void {
    this.ok({ compaction: { revision } });
  }
}

/** key=value pairs of a range result, for compact assertions. */
export function pairs(kvs: KeyValue[]): string[] {
  return kvs.map((kv) => `${kv.key.toString('latin1')}=${kv.value.toString('latin1')}`);
}

/** Captures a thrown error (EtcdError or other). */
export function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a throw');
}
