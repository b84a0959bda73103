// The agent's spool: every object it makes is written here durably first (data
// file fsynced, then its entry, written durably last), and only then uploaded
// (uploader.ts). A committed revision is therefore on this disk before the agent
// moves past it, and survives a store outage, kill -9 and a reboot: at start the
// spool is read back and uploaded in order, and an entry whose record was never
// written (a crash in between) is removed with its data file.
//
//   <dir>/<seq>.obj    the stored bytes (compressed, encrypted) of one object
//   <dir>/<seq>.json   { key, manifest }: the entry, its commit marker here
//   <dir>/work/        scratch (a full's plain snapshot), emptied at start
import fs from 'node:fs/promises';
import path from 'node:path';
import { syncDir, writeFileDurably } from '../../common/durableFile.js';
import { InputError } from '../../common/errors.js';
import type { Manifest } from '../manifest.js';

export interface SpoolEntry {
  seq: number;
  /** the data object's key; a gap has none */
  key?: string;
  manifestKey: string;
  manifest: Manifest;
  /** the local data file (absent for a gap) */
  dataFile?: string;
  /** bytes on disk (data file and entry) */
  bytes: number;
}

const SEQ = /^(\d{12})\.json$/;
const seqName = (seq: number) => String(seq).padStart(12, '0');

export class Spool {
  private readonly entries: SpoolEntry[] = [];
  private nextSeq = 1;
  private total = 0;

  private constructor(readonly dir: string) {}

  get workDir(): string {
    return path.join(this.dir, 'work');
  }

  static async open(dir: string): Promise<Spool> {
    const s = new Spool(path.resolve(dir));
    try {
      // 0700: the spool holds the cluster's data, unencrypted without --encrypt-to.
      await fs.mkdir(s.dir, { recursive: true, mode: 0o700 });
      await fs.mkdir(s.workDir, { recursive: true, mode: 0o700 });
    } catch (e) {
      throw new InputError(`--spool-dir ${dir}: cannot create it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); give a writable directory`);
    }
    await fs.rm(s.workDir, { recursive: true, force: true });
    await fs.mkdir(s.workDir, { mode: 0o700 });
    const names = await fs.readdir(s.dir);
    const complete = new Set<number>();
    for (const n of names) {
      const m = SEQ.exec(n);
      if (!m) continue;
      const seq = Number(m[1]);
      const rec = JSON.parse(await fs.readFile(path.join(s.dir, n), 'utf8')) as Omit<SpoolEntry, 'seq' | 'bytes'>;
      let bytes = (await fs.stat(path.join(s.dir, n))).size;
      if (rec.dataFile) bytes += (await fs.stat(rec.dataFile)).size;
      s.entries.push({ ...rec, seq, bytes });
      complete.add(seq);
      s.total += bytes;
      s.nextSeq = Math.max(s.nextSeq, seq + 1);
    }
    // Data files (and temp files) without an entry: a crash before the entry was written.
    for (const n of names) {
      const m = /^(\d{12})\.obj/.exec(n);
      if (m && !(n.endsWith('.obj') && complete.has(Number(m[1])))) await fs.rm(path.join(s.dir, n), { force: true });
      else if (m) s.nextSeq = Math.max(s.nextSeq, Number(m[1]) + 1);
    }
    s.entries.sort((a, b) => a.seq - b.seq);
    return s;
  }

  /** A fresh path for the data file of the next entry (encodeObject writes it). */
  newDataFile(): string {
    return path.join(this.dir, `${seqName(this.nextSeq++)}.obj`);
  }

  /** Commit an entry: its data file fsynced, then its record written durably. */
  async add(manifestKey: string, manifest: Manifest, data?: { key: string; file: string }): Promise<SpoolEntry> {
    let bytes = 0;
    let seq: number;
    if (data) {
      const fh = await fs.open(data.file, 'r+');
      try {
        await fh.sync();
        bytes += (await fh.stat()).size;
      } finally {
        await fh.close();
      }
      seq = Number(path.basename(data.file).slice(0, 12));
    } else seq = this.nextSeq++;
    const rec = { ...(data ? { key: data.key, dataFile: data.file } : {}), manifestKey, manifest };
    const text = `${JSON.stringify(rec)}\n`;
    await writeFileDurably(path.join(this.dir, `${seqName(seq)}.json`), text, 0o600);
    bytes += Buffer.byteLength(text);
    const entry: SpoolEntry = { ...rec, seq, bytes };
    this.entries.push(entry);
    this.entries.sort((a, b) => a.seq - b.seq);
    this.total += bytes;
    return entry;
  }

  /** The oldest entry not yet uploaded. */
  first(): SpoolEntry | undefined {
    return this.entries[0];
  }

  pending(): readonly SpoolEntry[] {
    return this.entries;
  }

  /** Forget an uploaded entry: its record first (so a crash re-uploads, never loses), then its data. */
  async remove(e: SpoolEntry): Promise<void> {
    await fs.rm(path.join(this.dir, `${seqName(e.seq)}.json`), { force: true });
    if (e.dataFile) await fs.rm(e.dataFile, { force: true });
    await syncDir(this.dir);
    const i = this.entries.indexOf(e);
    if (i >= 0) this.entries.splice(i, 1);
    this.total -= e.bytes;
  }

  get bytes(): number {
    return this.total;
  }
}
