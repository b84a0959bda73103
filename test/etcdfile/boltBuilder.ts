// A tiny bbolt file writer for unit tests: meta pages with their checksum, leaf
// and branch pages, inline bucket values. Just enough to build the shapes the
// reader must handle without a real etcd.
import { fnv1a64 } from '../../src/etcdfile/metaPage.js';

export interface LeafItem {
  key: string | Buffer;
  value: Buffer;
  bucket?: boolean;
}

const buf = (k: string | Buffer) => (typeof k === 'string' ? Buffer.from(k, 'latin1') : k);

/** A leaf page's bytes: header, elements, then keys and values packed; `size` 0 = no padding (inline). */
export function leafPage(id: number, items: LeafItem[], size: number): Buffer {
  const parts = items.map((it) => Buffer.concat([buf(it.key), it.value]));
  const dataLen = parts.reduce((n, p) => n + p.length, 0);
  const b = Buffer.alloc(Math.max(size, 16 + 16 * items.length + dataLen));
  b.writeBigUInt64LE(BigInt(id), 0);
  b.writeUInt16LE(0x02, 8);
  b.writeUInt16LE(items.length, 10);
  let data = 16 + 16 * items.length;
  items.forEach((it, i) => {
    const e = 16 + 16 * i;
    b.writeUInt32LE(it.bucket ? 1 : 0, e);
    b.writeUInt32LE(data - e, e + 4);
    b.writeUInt32LE(buf(it.key).length, e + 8);
    b.writeUInt32LE(it.value.length, e + 12);
    parts[i].copy(b, data);
    data += parts[i].length;
  });
  return b;
}

export function branchPage(id: number, children: Array<{ key: string; page: number }>, size: number): Buffer {
  const b = Buffer.alloc(size);
  b.writeBigUInt64LE(BigInt(id), 0);
  b.writeUInt16LE(0x01, 8);
  b.writeUInt16LE(children.length, 10);
  let data = 16 + 16 * children.length;
  children.forEach((c, i) => {
    const e = 16 + 16 * i;
    b.writeUInt32LE(data - e, e);
    b.writeUInt32LE(c.key.length, e + 4);
    b.writeBigUInt64LE(BigInt(c.page), e + 8);
    b.write(c.key, data, 'latin1');
    data += c.key.length;
  });
  return b;
}

export function metaPage(id: number, m: { pageSize: number; root: number; pgid: number; txid: number }): Buffer {
  const b = Buffer.alloc(m.pageSize);
  b.writeBigUInt64LE(BigInt(id), 0);
  b.writeUInt16LE(0x04, 8);
  const o = 16;
  b.writeUInt32LE(0xed0cdaed, o);
  b.writeUInt32LE(2, o + 4);
  b.writeUInt32LE(m.pageSize, o + 8);
  b.writeBigUInt64LE(BigInt(m.root), o + 16);
  b.writeBigUInt64LE(0xffff_ffff_ffff_ffffn, o + 32);
  b.writeBigUInt64LE(BigInt(m.pgid), o + 40);
  b.writeBigUInt64LE(BigInt(m.txid), o + 48);
  b.writeBigUInt64LE(fnv1a64(b.subarray(o, o + 56)), o + 56);
  return b;
}

/** A nested bucket's value: {root, sequence} then, when inline, its leaf page. */
export function bucketValue(root: number, inline?: LeafItem[]): Buffer {
  const h = Buffer.alloc(16);
  h.writeBigUInt64LE(BigInt(root), 0);
  return inline ? Buffer.concat([h, leafPage(0, inline, 0)]) : h;
}
