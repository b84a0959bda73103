// Verification: the source at one revision and the destination, walked side by
// side in key order (replacing a prefix keeps the order), key by key and value by
// value. Both sides also get a sha256 over their (key less prefix, value) pairs,
// printed so an operator can compare it with another tool's.
import { createHash, type Hash } from 'node:crypto';
import type { EtcdClient } from '../client/etcdClient.js';
import type { KeySelection } from '../client/keyRange.js';
import type { KeyValue } from '../client/types.js';
import { compactedError } from './copy.js';
import type { DestOp } from './destWriter.js';
import type { KeyMapping } from './keyMapping.js';

const PAGE = 1000;
const MAX_LISTED = 10;

export interface VerifyResult {
  equal: boolean;
  /** the source revision compared */
  revision: number;
  sourceKeys: number;
  destKeys: number;
  sourceSha256: string;
  destSha256: string;
  /** the first differences, one line each (at most MAX_LISTED) */
  differences: string[];
  differenceCount: number;
  /** with `repairs`: what makes the destination equal to the source at `revision` */
  repairs?: DestOp[];
}

/** Compares; with `repairs`, also lists the writes that would make the destination equal. */
export async function verifyAt(
  src: EtcdClient,
  dst: EtcdClient,
  mapping: KeyMapping,
  revision: number,
  opts: { repairs?: boolean } = {},
): Promise<VerifyResult> {
  const a = keys(src, mapping.source, revision);
  const b = keys(dst, mapping.dest, 0);
  const ha = createHash('sha256');
  const hb = createHash('sha256');
  const r: VerifyResult = { equal: true, revision, sourceKeys: 0, destKeys: 0, sourceSha256: '', destSha256: '', differences: [], differenceCount: 0 };
  if (opts.repairs) r.repairs = [];
  const differ = (what: string, suffix: Buffer, sourceValue?: Buffer) => {
    const key = Buffer.concat([mapping.destPrefix, suffix]);
    r.repairs?.push(sourceValue ? { put: { key, value: sourceValue } } : { delete: { key } });
    r.differenceCount++;
    if (r.differences.length < MAX_LISTED) r.differences.push(`${what}: ${JSON.stringify(mapping.destPrefix.toString() + suffix.toString())}`);
  };
  try {
    let x = await a.next();
    let y = await b.next();
    // Bounded: every pass consumes at least one key of one side.
    while (!x.done || !y.done) {
      const sx = x.done ? undefined : mapping.sourceSuffix(x.value.key);
      const sy = y.done ? undefined : mapping.destSuffix(y.value.key);
      const order = sx === undefined ? 1 : sy === undefined ? -1 : Buffer.compare(sx, sy);
      if (order <= 0) {
        r.sourceKeys++;
        digest(ha, sx!, x.value!.value);
      }
      if (order >= 0) {
        r.destKeys++;
        digest(hb, sy!, y.value!.value);
      }
      if (order < 0) differ('missing at the destination', sx!, x.value!.value);
      else if (order > 0) differ('only at the destination', sy!);
      else if (!x.value!.value.equals(y.value!.value)) differ('value differs', sx!, x.value!.value);
      if (order <= 0) x = await a.next();
      if (order >= 0) y = await b.next();
    }
  } catch (err) {
    throw compactedError(err, revision);
  }
  r.sourceSha256 = ha.digest('hex');
  r.destSha256 = hb.digest('hex');
  r.equal = r.differenceCount === 0;
  return r;
}

/** Every key of `sel` in key order, at `revision` (0: the revision of the first page, for a consistent read). */
async function* keys(c: EtcdClient, sel: KeySelection, revision: number): AsyncGenerator<KeyValue, void, undefined> {
  let rev = revision;
  let next = sel.key;
  for (;;) {
    const page = await c.range(next, { rangeEnd: sel.rangeEnd, limit: PAGE, ...(rev > 0 ? { revision: rev } : {}) });
    if (rev === 0) rev = page.header.revision;
    yield* page.kvs;
    if (!page.more || page.kvs.length === 0) return;
    next = Buffer.concat([page.kvs[page.kvs.length - 1].key, Buffer.from([0])]);
  }
}

function digest(h: Hash, suffix: Buffer, value: Buffer): void {
  const len = Buffer.alloc(8);
  len.writeUInt32BE(suffix.length, 0);
  len.writeUInt32BE(value.length, 4);
  h.update(len).update(suffix).update(value);
}
