// The backup agent's process scenario, run against a 3-member Lifeboat cluster
// and a 3-member etcd cluster (agentLifeboat.test.ts, agentEtcd.test.ts):
// `lifeboat backup run` under puts, deletes, multi-op Txns and leases; the
// member serving its watch killed; the agent killed with -9 and restarted.
// Every revision from the first full to the end must be in the store exactly
// once, equal to the cluster's own history (read through a watch), with no
// gap. Then the agent stopped, writes, a compaction past it, the agent
// restarted: exactly one gap, [last stored + 1, new full − 1].
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { readCatalog, type ClusterCatalog } from '../../src/backup/catalog.js';
import { FileStore } from '../../src/backup/fileStore.js';
import { decodeObject } from '../../src/backup/objectCodec.js';
import { decodeSegment, type SegmentRecord } from '../../src/backup/segmentCodec.js';
import { clientFor, type EtcdClient } from '../../src/client/etcdClient.js';
import { ALL_KEYS } from '../../src/client/keyRange.js';
import type { ObjectStore } from '../../src/backup/objectStore.js';
import { BIN, run, waitFor } from '../support/lifeboatCluster.js';
import { freePorts } from '../support/ports.js';

export interface Agent {
  proc: ChildProcess;
  lines: string[];
  exit: Promise<number | null>;
}

export function startAgent(args: string[], env: Record<string, string> = {}): Agent {
  const proc = spawn(process.execPath, [BIN, 'backup', 'run', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const lines: string[] = [];
  for (const s of [proc.stdout, proc.stderr]) {
    let partial = '';
    s.on('data', (d: Buffer) => {
      const got = (partial + d.toString()).split('\n');
      partial = got.pop() ?? '';
      lines.push(...got);
      if (process.env.LIFEBOAT_TEST_VERBOSE) for (const l of got) process.stderr.write(`agent: ${l}\n`);
    });
  }
  const exit = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return { proc, lines, exit };
}

async function stopAgent(a: Agent, signal: NodeJS.Signals, timeoutMs = 20_000): Promise<number | null> {
  if (a.proc.exitCode !== null || a.proc.signalCode !== null) return a.proc.exitCode;
  a.proc.kill(signal);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs)));
  const code = await Promise.race([a.exit, timeout]);
  clearTimeout(timer);
  if (code === 'timeout') {
    a.proc.kill('SIGKILL');
    throw new Error(`the agent did not stop within ${timeoutMs} ms after ${signal}; its output: ${a.lines.slice(-10).join(' | ')}`);
  }
  return code;
}

const waitLine = (a: Agent, re: RegExp, what: string, from = 0, timeoutMs = 30_000) =>
  waitFor(
    what,
    () => {
      if (a.proc.exitCode !== null) throw new Error(`the agent exited (${a.proc.exitCode}): ${a.lines.slice(-5).join(' | ')}`);
      return a.lines.slice(from).find((l) => re.test(l));
    },
    timeoutMs,
  );

/** Writes of every kind: puts, deletes, Txns of several ops, keys on a lease that is then revoked. */
async function load(c: EtcdClient, tag: string, n: number): Promise<void> {
  const lease = (await c.leaseGrant(60)).id;
  for (let i = 0; i < n; i++) {
    const k = `k/${tag}/${i}`;
    if (i % 5 === 4) await c.deleteRange(`k/${tag}/${i - 1}`);
    else if (i % 5 === 2)
      await c.txn({
        success: [{ put: { key: `${k}a`, value: `t${i}` } }, { put: { key: `${k}b`, value: 'x', lease } }, { deleteRange: { key: `k/${tag}/${i - 2}` } }],
      });
    else await c.put(k, `v${i}`, i % 5 === 3 ? { lease } : {});
  }
  await c.leaseRevoke(lease);
}

const headOf = async (c: EtcdClient) => (await c.range('k/', { countOnly: true })).header.revision;

async function metric(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (!m) throw new Error(`no ${name} in /metrics`);
  return Number(m[1]);
}

interface Rev {
  revision: number;
  events: string[];
}

const eventText = (e: { type: string; kv: { key: Buffer; value: Buffer; createRevision: number; modRevision: number; version: number; lease: bigint } }) =>
  `${e.type} ${e.kv.key.toString()}=${e.type === 'PUT' ? e.kv.value.toString() : ''} c${e.kv.createRevision} m${e.kv.modRevision} v${e.kv.version} l${e.kv.lease}`;

/** Every record of the cluster's segments, in revision order, each checked against its manifest. */
async function storedRecords(store: ObjectStore, c: ClusterCatalog, scratch: string): Promise<SegmentRecord[]> {
  const out: SegmentRecord[] = [];
  for (const s of c.segments) {
    const stored = path.join(scratch, 'seg.stored');
    const plain = path.join(scratch, 'seg.plain');
    fs.rmSync(plain, { force: true });
    await store.download(s.object, stored);
    await decodeObject(stored, plain, s);
    const seg = decodeSegment(fs.readFileSync(plain));
    const revs = seg.records.filter((r) => r.kind === 'revision');
    assert.equal(revs.length, s.revisions, `${s.object}: revisions against its manifest`);
    assert.equal(revs[0].revision, s.fromRevision);
    assert.equal(revs[revs.length - 1].revision, s.toRevision);
    out.push(...seg.records);
  }
  return out;
}

/** The cluster's history (fromRev..toRev) through a watch, revision by revision. */
async function history(c: EtcdClient, fromRev: number, toRev: number): Promise<Rev[]> {
  const w = await c.watch(ALL_KEYS.key, { rangeEnd: ALL_KEYS.rangeEnd, startRevision: fromRev });
  const out: Rev[] = [];
  try {
    const deadline = Date.now() + 20_000;
    while ((out[out.length - 1]?.revision ?? 0) < toRev && Date.now() < deadline) {
      const b = await w.next(1000);
      for (const e of b?.events ?? []) {
        const last = out[out.length - 1];
        if (last?.revision === e.kv.modRevision) last.events.push(eventText(e));
        else out.push({ revision: e.kv.modRevision, events: [eventText(e)] });
      }
    }
  } finally {
    w.close();
  }
  return out.filter((r) => r.revision <= toRev);
}

export interface ScenarioCluster {
  /** every member's client endpoint (host:port) */
  endpoints: string[];
  /** kill the member serving `endpoint` */
  kill(endpoint: string): Promise<void>;
}

export interface ScenarioStore {
  url: string;
  /** the agent's flags for it beyond --store (e.g. --s3-endpoint) */
  args: string[];
  /** the agent's environment for it (e.g. S3 credentials) */
  env: Record<string, string>;
  /** the test's own reader of it */
  store: ObjectStore;
  /** stop and start it: the scenario makes an outage of 20 s when given */
  outage?: { stop(): Promise<void>; start(): Promise<void> };
}

/** A file:// store in `dir`. */
export function fileStoreIn(dir: string): ScenarioStore {
  const storeDir = path.join(dir, 'store');
  fs.mkdirSync(storeDir, { recursive: true });
  const url = pathToFileURL(storeDir).href;
  return { url, args: [], env: {}, store: new FileStore(url, storeDir) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function agentScenario(seed: string, cluster: ScenarioCluster, storeIn: (dir: string) => Promise<ScenarioStore>): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `lifeboat-${seed}-`));
  const { url, store, env, outage, args: storeArgs } = await storeIn(dir);
  const [port] = await freePorts(1, `${seed}-metrics`);
  const args = [
    '--endpoints',
    cluster.endpoints.join(','),
    '--store',
    url,
    ...storeArgs,
    '--spool-dir',
    path.join(dir, 'spool'),
    '--delta-interval',
    '300ms',
    '--hash-every',
    '40',
    '--listen-metrics',
    `http://127.0.0.1:${port}`,
    '--full-after-events',
    '40',
    // Small enough that the outage fills it: the agent must stop reading, never drop.
    ...(outage ? ['--spool-limit', '8KiB'] : []),
  ];
  let live = [...cluster.endpoints];
  let writer = clientFor(live, { dialTimeoutMs: 3000, commandTimeoutMs: 10_000 });
  const agents: Agent[] = [];
  try {
    await load(writer, 'pre', 10);
    let agent = startAgent(args, env);
    agents.push(agent);
    await waitLine(agent, /full \(first full\) at revision \d+/, 'the first full');
    const served = /watching (\S+) from revision/.exec(await waitLine(agent, /watching \S+ from revision/, 'the watch'))![1];

    // One agent per store: a second is refused (exit 3), naming the first's host and start time.
    const second = await run(
      process.execPath,
      [BIN, 'backup', 'run', '--endpoints', live.join(','), '--store', url, ...storeArgs, '--spool-dir', path.join(dir, 'spool2')],
      { env },
    );
    assert.equal(second.code, 3, second.stderr);
    assert.match(second.stderr, new RegExp(`locked by the agent on ${os.hostname()} \\(pid ${agent.proc.pid}, started \\d{4}-`));

    await load(writer, 'a', 30);
    if (outage) {
      // The store down for 20 s: writes go on, the agent commits them to its spool and says it is unhealthy.
      await outage.stop();
      const until = Date.now() + 20_000;
      for (let i = 0; Date.now() < until; i++) {
        await load(writer, `out${i}`, 5);
        await sleep(1000);
      }
      assert.ok((await metric(port, 'lifeboat_backup_spool_bytes')) > 0, 'revisions wait in the spool');
      assert.ok((await metric(port, 'lifeboat_backup_store_retries_total')) > 0, 'store calls retried');
      assert.ok((await metric(port, 'lifeboat_backup_last_stored_revision')) > (await metric(port, 'lifeboat_backup_last_uploaded_revision')));
      assert.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 503);
      await waitLine(agent, /SPOOL FULL: \d+ bytes over --spool-limit 8192; the agent stopped reading the watch/, 'back-pressure');
      await outage.start();
    }
    // The member serving the watch dies: the agent watches another from where it was.
    const seen = agent.lines.length;
    await cluster.kill(served);
    live = live.filter((e) => e !== served);
    writer.close();
    writer = clientFor(live, { dialTimeoutMs: 3000, commandTimeoutMs: 10_000 });
    // A write goes through once the others have (re-)elected a leader.
    await waitFor('a write after the kill', async () => (await writer.put('probe', 'after-kill')).header.revision > 0, 30_000, 200);
    await load(writer, 'b', 30);
    const other = /watching (\S+) from revision/.exec(await waitLine(agent, /watching \S+ from revision/, 'the watch on another member', seen))![1];
    assert.notEqual(other, served);

    // kill -9 and a restart: the new agent takes over the dead one's lock and resumes.
    await stopAgent(agent, 'SIGKILL');
    await load(writer, 'c', 20);
    agent = startAgent(args, env);
    agents.push(agent);
    await waitLine(agent, /taking over the lock of the agent on .* that process is gone/, 'the lock taken over');
    await waitLine(agent, /resuming after revision \d+/, 'the resume');
    await load(writer, 'd', 20);
    const head = await headOf(writer);
    await waitFor('the agent to upload every revision', async () => (await metric(port, 'lifeboat_backup_last_uploaded_revision')) >= head, 30_000);
    await waitFor(
      'no lag',
      async () => (await metric(port, 'lifeboat_backup_lag_revisions')) === 0 && (await metric(port, 'lifeboat_backup_lag_seconds')) === 0,
      10_000,
    );
    // Healthy once caught up (a watch reconnect or a background full may hold it at 503 for a moment).
    await waitFor('/health to answer 200', async () => (await fetch(`http://127.0.0.1:${port}/health`)).status === 200, 10_000);
    assert.ok((await metric(port, 'lifeboat_backup_objects_written_total')) > 0);

    // A full in the background after --full-after-events (each agent sees more than 40 events).
    await waitFor('a full after --full-after-events in the store', async () => ((await readCatalog(store)).clusters[0]?.fulls.length ?? 0) >= 2, 30_000);
    // Every revision from the first full to the head: stored once, in order, equal to the cluster's history.
    const cat = await readCatalog(store);
    assert.equal(cat.clusters.length, 1);
    const c = cat.clusters[0];
    assert.deepEqual(c.holes, []);
    assert.deepEqual(c.gaps, []);
    const first = c.fulls[0].revision;
    assert.ok(c.fulls.length >= 2, 'a full after --full-after-events');
    assert.ok(agents.some((a) => a.lines.some((l) => /full \(\d+ events since the last\) at revision \d+/.test(l))));
    assert.ok(c.fulls[0].hashPoints.length === 1 && c.fulls[0].hashPoints[0].revision === first, 'the full records HashKV at its revision');
    assert.ok(
      c.segments.some((s) => s.hashPoints.length > 0),
      'segments carry hash points (--hash-every)',
    );
    let next = first + 1;
    for (const s of c.segments) {
      assert.equal(s.fromRevision, next, `${s.object} starts where the previous ended`);
      assert.ok(Date.parse(s.windowStart) <= Date.parse(s.firstSeenAt) && Date.parse(s.firstSeenAt) <= Date.parse(s.lastSeenAt));
      next = s.toRevision + 1;
    }
    assert.ok(next > head, `the segments reach the head ${head} (to ${next - 1})`);
    const records = await storedRecords(store, c, dir);
    const stored: Rev[] = records.filter((r) => r.kind === 'revision').map((r) => ({ revision: r.revision, events: r.events.map(eventText) }));
    const want = await history(writer, first + 1, head);
    assert.deepEqual(
      stored.filter((r) => r.revision <= head),
      want,
    );
    for (const r of records) if (r.kind === 'revision') assert.ok(r.currentSinceMs <= r.seenAtMs, `revision ${r.revision}: its window`);
    // Each lease is granted before the first revision that puts a key on it.
    const granted = new Set<bigint>();
    for (const r of records) {
      if (r.kind === 'lease-grant') granted.add(r.id);
      if (r.kind === 'revision')
        for (const e of r.events)
          if (e.type === 'PUT' && e.kv.lease !== 0n) assert.ok(granted.has(e.kv.lease), `lease ${e.kv.lease} granted before revision ${r.revision}`);
    }
    assert.ok(
      records.some((r) => r.kind === 'lease-revoke'),
      'a revoke recorded',
    );

    // Stopped (SIGTERM: exit 0, the lock released), writes, a compaction past it, restarted: one gap, exactly as wide.
    assert.equal(await stopAgent(agent, 'SIGTERM'), 0);
    assert.equal(await store.head('lock.json'), undefined);
    const lastStored = next - 1;
    await load(writer, 'e', 10);
    await writer.compact(await headOf(writer));
    agent = startAgent(args, env);
    agents.push(agent);
    await waitLine(agent, /GAP recorded/, 'the gap');
    const after = await waitFor('the gap in the store', async () => {
      const cl = (await readCatalog(store)).clusters[0];
      return cl.gaps.length > 0 && cl;
    });
    assert.equal(after.gaps.length, 1);
    const newFull = after.fulls[after.fulls.length - 1];
    assert.equal(after.gaps[0].reason, 'compacted');
    assert.deepEqual([after.gaps[0].fromRevision, after.gaps[0].toRevision], [lastStored + 1, newFull.revision - 1]);
    assert.deepEqual(
      after.holes.map((h) => [h.fromRevision, h.toRevision, h.recorded]),
      [[lastStored + 1, newFull.revision - 1, true]],
    );
    assert.equal(await stopAgent(agent, 'SIGTERM'), 0);
  } finally {
    writer.close();
    store.close();
    for (const a of agents) await stopAgent(a, 'SIGKILL').catch(() => undefined);
    if (!process.env.LIFEBOAT_KEEP_TEST_DIRS) fs.rmSync(dir, { recursive: true, force: true });
  }
}
