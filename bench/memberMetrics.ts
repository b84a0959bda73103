// What the bench reads from a member's /metrics (Prometheus text): the event-loop
// delay since the last scrape, leader changes seen, and what an idle member's memory
// is made of (runtimeMetrics.ts). Both systems export etcd's names; only Lifeboat
// has an event loop.
import http from 'node:http';
import https from 'node:https';
import fs from 'node:fs';
import type { TlsOptions } from '../src/client/tls.js';

/** Samples by name with their labels as written (`name{a="b"}`), values as numbers. */
export type Samples = Map<string, number>;

export function parseMetrics(text: string): Samples {
  const out: Samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

/** GET url's /metrics, with the client certificate of `tls` on https://. */
export function scrape(url: string, tls?: TlsOptions, timeoutMs = 5000): Promise<Samples> {
  return new Promise((resolve, reject) => {
    const secure = url.startsWith('https:');
    const opts = secure && tls ? { ca: read(tls.caFile), cert: read(tls.certFile), key: read(tls.keyFile) } : {};
    const req = (secure ? https : http).get(url, { ...opts, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => (res.statusCode === 200 ? resolve(parseMetrics(body)) : reject(new Error(`${url}: HTTP ${res.statusCode}`))));
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

const read = (file?: string) => (file ? fs.readFileSync(file) : undefined);

/** Scrapes every URL; a member that does not answer gives an empty map (its figures are then missing, not the run). */
export const scrapeAll = (urls: string[], tls?: TlsOptions): Promise<Samples[]> => Promise.all(urls.map((u) => scrape(u, tls).catch(() => new Map())));

export interface LoopDelay {
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  meanMs: number;
}

/** The event-loop delay since the previous scrape (Lifeboat's nodejs_eventloop_lag_*), or undefined (etcd). */
export function loopDelay(s: Samples): LoopDelay | undefined {
  const v = (name: string) => (s.get(`nodejs_eventloop_lag_${name}_seconds`) ?? NaN) * 1000;
  if (!s.has('nodejs_eventloop_lag_max_seconds')) return undefined;
  return { p50Ms: v('p50'), p90Ms: v('p90'), p99Ms: v('p99'), maxMs: v('max'), meanMs: v('mean') };
}

export const leaderChanges = (s: Samples): number => s.get('etcd_server_leader_changes_seen_total') ?? NaN;

const MiB = 1024 * 1024;

/** An idle Lifeboat member's memory by part, MiB (from its runtime metrics); undefined for etcd. */
export interface MemoryParts {
  heapUsed: number;
  heapTotal: number;
  codeSpace: number;
  external: number;
  arrayBuffers: number;
  /** what SQLite's page cache of kv.db can hold now: its limit or the file, whichever is smaller */
  sqliteCacheBound: number;
  watchdogWorker: boolean;
}

export function memoryParts(s: Samples): MemoryParts | undefined {
  if (!s.has('nodejs_heap_size_used_bytes')) return undefined;
  const b = (name: string) => (s.get(name) ?? NaN) / MiB;
  return {
    heapUsed: b('nodejs_heap_size_used_bytes'),
    heapTotal: b('nodejs_heap_size_total_bytes'),
    codeSpace: b('nodejs_heap_space_size_total_bytes{space="code"}'),
    external: b('nodejs_external_memory_bytes'),
    arrayBuffers: b('lifeboat_nodejs_array_buffers_bytes'),
    sqliteCacheBound: Math.min(b('lifeboat_kv_page_cache_limit_bytes'), b('etcd_mvcc_db_total_size_in_bytes')),
    watchdogWorker: s.get('lifeboat_stall_watchdog_worker_running') === 1,
  };
}

/** RSS, PSS and private memory of a process from /proc/<pid>/smaps_rollup, MiB (NaN once it is gone). */
export function smapsRollup(pid: number): { rss: number; pss: number; private: number } {
  let text = '';
  try {
    text = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  } catch {
    return { rss: NaN, pss: NaN, private: NaN };
  }
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) / 1024;
  return { rss: kb('Rss'), pss: kb('Pss'), private: kb('Private_Clean') + kb('Private_Dirty') };
}
