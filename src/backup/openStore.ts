// A store from the URL the operator gives: file:///dir or s3://bucket/prefix.
// The S3 SDK is imported only here, and only for an s3:// URL, so everyday
// commands never load it.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { InputError } from '../common/errors.js';
import { FileStore } from './fileStore.js';
import type { ObjectStore, S3StoreOptions } from './objectStore.js';

export type { S3StoreOptions } from './objectStore.js';

export interface ParsedStoreUrl {
  scheme: 'file' | 's3';
  /** file: the directory; s3: the bucket */
  location: string;
  /** s3: the key prefix, "" or ending in "/" */
  prefix: string;
}

export function parseStoreUrl(url: string): ParsedStoreUrl {
  const bad = (why: string) => new InputError(`--store ${url}: ${why}; give file:///absolute/dir or s3://bucket/prefix`);
  if (url.startsWith('file://')) {
    let dir: string;
    try {
      dir = fileURLToPath(url);
    } catch (e) {
      throw bad((e as Error).message);
    }
    if (!path.isAbsolute(dir)) throw bad('not an absolute path');
    return { scheme: 'file', location: dir, prefix: '' };
  }
  if (url.startsWith('s3://')) {
    const rest = url.slice('s3://'.length);
    const slash = rest.indexOf('/');
    const bucket = slash < 0 ? rest : rest.slice(0, slash);
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw bad(`"${bucket}" is not a bucket name`);
    const raw = slash < 0 ? '' : rest.slice(slash + 1).replace(/^\/+|\/+$/g, '');
    if (raw.split('/').some((p) => p === '.' || p === '..')) throw bad('the prefix holds "." or ".."');
    return { scheme: 's3', location: bucket, prefix: raw ? `${raw}/` : '' };
  }
  throw bad('unknown scheme');
}

export async function openStore(url: string, s3: S3StoreOptions = {}): Promise<ObjectStore> {
  const parsed = parseStoreUrl(url);
  if (parsed.scheme === 'file') return new FileStore(url, parsed.location);
  const { S3Store } = await import('./s3Store.js');
  return S3Store.open(url, parsed.location, parsed.prefix, s3);
}
