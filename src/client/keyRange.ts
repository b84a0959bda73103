// Key ranges as etcd encodes them (clientv3/op.go): an empty range_end is the key
// alone, "\0" is every key ≥ key, and a prefix's end is the prefix with its last
// byte below 0xff incremented and the rest dropped.
import { InputError } from '../common/errors.js';

const NUL = Buffer.from([0]);

export function toBytes(b: Buffer | string | undefined): Buffer {
  if (b === undefined) return Buffer.alloc(0);
  return typeof b === 'string' ? Buffer.from(b, 'utf8') : b;
}

/** The range_end that selects every key starting with `prefix` ("\0" if none exists). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) {
      end[i] += 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from(NUL);
}

export interface KeySelection {
  key: Buffer;
  rangeEnd: Buffer;
}

/**
 * The (key, range_end) pair for get/del: `KEY [END]`, `--prefix` or `--from-key`,
 * with etcdctl's rules for an empty key.
 */
export function selectKeys(key: string, end: string | undefined, opts: { prefix?: boolean; fromKey?: boolean }): KeySelection {
  if (opts.prefix && opts.fromKey) throw new InputError('--prefix and --from-key cannot be used together');
  if (end !== undefined && (opts.prefix || opts.fromKey)) {
    throw new InputError(`END cannot be combined with ${opts.prefix ? '--prefix' : '--from-key'}; give KEY only`);
  }
  const k = Buffer.from(key, 'utf8');
  if (opts.prefix) {
    return k.length === 0 ? { key: Buffer.from(NUL), rangeEnd: Buffer.from(NUL) } : { key: k, rangeEnd: prefixEnd(k) };
  }
  if (opts.fromKey) {
    return { key: k.length === 0 ? Buffer.from(NUL) : k, rangeEnd: Buffer.from(NUL) };
  }
  if (k.length === 0) throw new InputError('KEY is empty: give a key, or "" with --prefix for every key');
  return { key: k, rangeEnd: end === undefined ? Buffer.alloc(0) : Buffer.from(end, 'utf8') };
}

/** Every key: for counting keys and for a whole-keyspace range. */
export const ALL_KEYS: KeySelection = { key: Buffer.from(NUL), rangeEnd: Buffer.from(NUL) };
