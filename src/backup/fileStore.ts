// file:///dir: a backup store in a local directory (a laptop, a test, an NFS
// mount). Keys map to paths under the directory; every put is a durable whole-
// file write (src/common/durableFile.ts), so a reader never sees half an object
// and a power cut leaves the old object or the new one. Temp files a killed
// writer left are the "stale uploads" of this store.
import fs from 'node:fs/promises';
import path from 'node:path';
import { copyFileDurably, syncDir, tempPathFor, writeFileDurably } from '../common/durableFile.js';
import { ObjectMissing, StoreUnavailable, type ObjectStore, type PutOptions, type StoredObject } from './objectStore.js';

const TEMP_SUFFIX = /\.\d+-[0-9a-f]{8}\.tmp$/;

export class FileStore implements ObjectStore {
  constructor(
    readonly url: string,
    private readonly root: string,
  ) {}

  private pathOf(key: string): string {
    if (key === '' || key.split('/').some((part) => part === '' || part === '.' || part === '..')) throw new Error(`bad object key ${JSON.stringify(key)}`);
    return path.join(this.root, ...key.split('/'));
  }

  private async ensureRoot(): Promise<void> {
    try {
      const st = await fs.stat(this.root);
      if (!st.isDirectory()) throw new StoreUnavailable(`${this.url}: ${this.root} is not a directory; give a directory for the store`, false);
    } catch (e) {
      if (e instanceof StoreUnavailable) throw e;
      if ((e as NodeJS.ErrnoException).code === 'ENOENT')
        throw new StoreUnavailable(`${this.url}: the directory ${this.root} does not exist; create it (or mount the store) first`, false);
      throw new StoreUnavailable(`${this.url}: ${(e as Error).message}`);
    }
  }

  async put(key: string, body: Buffer | undefined, opts: PutOptions = {}): Promise<void> {
    await this.ensureRoot();
    const file = this.pathOf(key);
    const dir = path.dirname(file);
    const created = await fs.mkdir(dir, { recursive: true });
    if (created) await syncDir(path.dirname(created));
    if (opts.file) await copyFileDurably(opts.file, file);
    else await writeFileDurably(file, body ?? Buffer.alloc(0));
  }

  async get(key: string): Promise<Buffer> {
    try {
      return await fs.readFile(this.pathOf(key));
    } catch (e) {
      throw this.readError(key, e);
    }
  }

  async download(key: string, file: string): Promise<number> {
    const tmp = tempPathFor(file);
    try {
      await fs.copyFile(this.pathOf(key), tmp);
      await fs.rename(tmp, file);
    } catch (e) {
      await fs.rm(tmp, { force: true });
      throw this.readError(key, e);
    }
    return (await fs.stat(file)).size;
  }

  private readError(key: string, e: unknown): Error {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return new ObjectMissing(this.url, key);
    return new StoreUnavailable(`${this.url}: reading ${key}: ${(e as Error).message}`);
  }

  async head(key: string): Promise<StoredObject | undefined> {
    try {
      const st = await fs.stat(this.pathOf(key));
      return st.isFile() ? { key, size: st.size, lastModified: st.mtime } : undefined;
    } catch {
      return undefined;
    }
  }

  async list(prefix: string): Promise<StoredObject[]> {
    await this.ensureRoot();
    const out: StoredObject[] = [];
    const walk = async (dir: string, rel: string): Promise<void> => {
      let entries: import('node:fs').Dirent[];
      try {
        entries = await fs.readdir(dir, { withFileTypes: true });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw e;
      }
      for (const ent of entries) {
        const key = rel ? `${rel}/${ent.name}` : ent.name;
        // Only descend where the prefix can still match.
        if (!(key.startsWith(prefix) || prefix.startsWith(`${key}/`))) continue;
        const full = path.join(dir, ent.name);
        if (ent.isDirectory()) await walk(full, key);
        else if (ent.isFile() && !TEMP_SUFFIX.test(ent.name) && key.startsWith(prefix)) {
          const st = await fs.stat(full);
          out.push({ key, size: st.size, lastModified: st.mtime });
        }
      }
    };
    await walk(this.root, '');
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async delete(key: string): Promise<void> {
    await fs.rm(this.pathOf(key), { force: true });
  }

  async abortStaleUploads(olderThanMs: number): Promise<number> {
    await this.ensureRoot();
    let n = 0;
    const cutoff = Date.now() - olderThanMs;
    const walk = async (dir: string): Promise<void> => {
      for (const ent of await fs.readdir(dir, { withFileTypes: true })) {
        const full = path.join(dir, ent.name);
        if (ent.isDirectory()) await walk(full);
        else if (TEMP_SUFFIX.test(ent.name) && (await fs.stat(full)).mtimeMs < cutoff) {
          await fs.rm(full, { force: true });
          n++;
        }
      }
    };
    await walk(this.root);
    return n;
  }

  close(): void {}
}
