// Point-in-time restore against the agent, on a 3-member cluster of each
// runtime: `lifeboat backup run` into a file store while a seeded random load
// puts, deletes, runs multi-op Txns, deletes more than 128 keys in one request,
// grants leases that expire or are revoked, and compacts. The whole keyspace
// (values, create/mod revisions, versions, leases) is read at 10 random
// revisions before they are compacted; `backup restore --at REV` must then give
// a snapshot that a member restored from serves exactly that keyspace. A time
// inside an agent outage longer than --max-time-uncertainty is refused without
// --accept-uncertain-time and maps to the last revision before the outage with it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'node:test';
import { lastStoredRevision, readCatalog } from '../../src/backup/catalog.js';
import { FileStore } from '../../src/backup/fileStore.js';
import { clientFor, type EtcdClient } from '../../src/client/etcdClient.js';
import { BackupFixture } from '../support/backupFixture.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { LifeboatCluster, waitFor } from '../support/lifeboatCluster.js';
import { lifeboat } from '../support/tools.js';
import { Rng } from '../sim/rng.js';
import { startAgent, type Agent } from './agentScenario.js';

const conn = { dialTimeoutMs: 3000, commandTimeoutMs: 10_000 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const READS = 10;
/** the load runs this long (leases of LEASE_TTL s expire inside it), at most MAX_STEPS operations */
const LOAD_MS = 6000;
const MAX_STEPS = 600;
const LEASE_TTL = 3;

interface Load {
  /** the keyspace read at a revision, before any compaction reached it */
  reads: Map<number, string[]>;
  compactions: number;
  expiries: number;
}

/** The seeded random load; every operation kind at least once. */
async function randomLoad(c: EtcdClient, rng: Rng): Promise<Load> {
  const reads = new Map<number, string[]>();
  const key = () => `/p/${String(rng.int(60)).padStart(2, '0')}`;
  const leases: bigint[] = [];
  /** leases granted for 600 s: the ones a revoke picks (a short one must expire) */
  const long: bigint[] = [];
  let compacted = 0;
  let compactions = 0;
  let expiring = 0;
  let head = (await c.status()).header.revision;
  const kinds = ['put', 'delete', 'range-delete', 'txn', 'grant', 'leased-put', 'revoke', 'compact', 'bulk-delete'] as const;
  const started = Date.now();
  for (let step = 0; step < MAX_STEPS && Date.now() - started < LOAD_MS; step++) {
    // The first steps run each kind once; then weighted at random.
    const kind =
      step < kinds.length
        ? kinds[step]
        : rng.weighted<(typeof kinds)[number]>([
            ['put', 30],
            ['delete', 8],
            ['range-delete', 2],
            ['txn', 10],
            ['grant', 3],
            ['leased-put', 6],
            ['revoke', 2],
            ['compact', 2],
            ['bulk-delete', 0.3],
          ])!;
    switch (kind) {
      case 'put':
        head = (await c.put(key(), `v${step}`)).header.revision;
        break;
      case 'delete':
        head = (await c.deleteRange(key())).header.revision;
        break;
      case 'range-delete': {
        const from = `/p/${rng.int(6)}`;
        head = (await c.deleteRange(from, { rangeEnd: `${from}5` })).header.revision;
        break;
      }
      case 'txn': {
        const ops = Array.from({ length: rng.between(2, 5) }, (_, i) =>
          rng.chance(0.3) ? { deleteRange: { key: key() } } : { put: { key: `${key()}${i % 2 ? '' : '/t'}`, value: `t${step}.${i}` } },
        );
        // Txn keys must be distinct.
        const seen = new Set<string>();
        const distinct = ops.filter((o) => {
          const k = (o.put?.key ?? o.deleteRange?.key)!;
          return !seen.has(k) && seen.add(k);
        });
        head = (await c.txn({ success: distinct })).header.revision;
        break;
      }
      case 'grant': {
        // Short leases (the first always), granted early enough to expire during the load; long ones are revoked or outlive it.
        const early = Date.now() - started < LOAD_MS - (LEASE_TTL + 1) * 1000;
        const short = early && (expiring === 0 || rng.chance(0.5));
        if (short) expiring++;
        const id = (await c.leaseGrant(short ? LEASE_TTL : 600)).id;
        leases.push(id);
        if (!short) long.push(id);
        break;
      }
      case 'leased-put':
        if (leases.length > 0) head = (await c.put(key(), `l${step}`, { lease: rng.pick(leases) }).catch(() => undefined))?.header.revision ?? head;
        break;
      case 'revoke':
        if (long.length > 0) {
          const id = long.splice(rng.int(long.length), 1)[0];
          leases.splice(leases.indexOf(id), 1);
          await c.leaseRevoke(id);
        }
        break;
      case 'compact':
        if (head - 20 > compacted) {
          compacted = rng.between(compacted + 1, head - 20);
          await c.compact(compacted);
          compactions++;
        }
        break;
      case 'bulk-delete': {
        const n = 150;
        await Promise.all(Array.from({ length: n }, (_, i) => c.put(`/bulk/${step}/${String(i).padStart(3, '0')}`, 'x'.repeat(rng.between(1, 200)))));
        head = (await c.deleteRange(`/bulk/${step}/`, { rangeEnd: `/bulk/${step}0` })).header.revision;
        break;
      }
    }
    // Reads spread over the load, each at a random revision not compacted yet.
    if (reads.size < READS && (step + 1) % 25 === 0) {
      head = (await c.status()).header.revision;
      const at = rng.between(compacted + 1, head);
      if (!reads.has(at)) reads.set(at, await BackupFixture.keyspace(c, at));
    }
    await sleep(10);
  }
  // Up to READS, at the end (the load may have ended early on a slow machine).
  for (let i = 0; reads.size < READS && i < 100; i++) {
    head = (await c.status()).header.revision;
    const at = rng.between(compacted + 1, head);
    if (!reads.has(at)) reads.set(at, await BackupFixture.keyspace(c, at));
  }
  // The short leases expire on their own: wait for that (their keys' deletes are revisions too).
  await waitFor(
    'the short leases to expire',
    async () => {
      const live = await c.leaseLeases();
      for (const id of live) if ((await c.leaseTimeToLive(id)).grantedTtl === LEASE_TTL) return false;
      return true;
    },
    (LEASE_TTL + 5) * 1000,
    250,
  );
  return { reads, compactions, expiries: expiring };
}

async function restore(store: string, at: string, output: string, ...args: string[]) {
  return lifeboat('backup', 'restore', store, '--at', at, '--output', output, ...args);
}

async function revisionOf(file: string): Promise<number> {
  const st = await lifeboat('snapshot', 'status', file, '-w', 'json');
  assert.equal(st.code, 0, st.stderr);
  return (JSON.parse(st.stdout) as { revision: number }).revision;
}

async function stopAgent(a: Agent): Promise<void> {
  if (a.proc.exitCode !== null || a.proc.signalCode !== null) return;
  a.proc.kill('SIGTERM');
  const t = setTimeout(() => a.proc.kill('SIGKILL'), 15_000);
  await a.exit;
  clearTimeout(t);
}

for (const runtime of ['etcd', 'lifeboat'] as const) {
  test(
    `point-in-time restore of a 3-member ${runtime} cluster under the agent: 10 random revisions equal field by field; a time in an agent outage refused unless accepted`,
    { timeout: 240_000 },
    async () => {
      const seed = `pointInTime.${runtime}`;
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), `lifeboat-pitr-${runtime}-`));
      let endpoints: string[];
      let stopCluster: () => Promise<unknown>;
      if (runtime === 'etcd') {
        const cl = await EtcdCluster.start({ size: 3, portSeed: seed });
        endpoints = cl.members.map((m) => cl.endpointOf(m));
        stopCluster = () => cl.stop();
      } else {
        const cl = await LifeboatCluster.start(seed, 3);
        endpoints = cl.endpoints();
        stopCluster = () => cl.stopAll();
      }
      const storeDir = path.join(dir, 'store');
      fs.mkdirSync(storeDir);
      const url = pathToFileURL(storeDir).href;
      const store = new FileStore(url, storeDir);
      const c = clientFor(endpoints, conn);
      const args = [
        '--endpoints',
        endpoints.join(','),
        '--store',
        url,
        '--spool-dir',
        path.join(dir, 'spool'),
        '--delta-interval',
        '300ms',
        '--full-after-events',
        '150',
      ];
      let agent: Agent | undefined;
      const caughtUp = async () => {
        const head = (await c.status()).header.revision;
        const cat = await readCatalog(store);
        return cat.clusters.length === 1 && lastStoredRevision(cat.clusters[0]) >= head;
      };
      try {
        for (let i = 0; i < 20; i++) await c.put(`/p/${String(i).padStart(2, '0')}`, 'initial');
        agent = startAgent(args);
        await waitFor('the first full', caughtUp, 30_000, 200);
        const load = await randomLoad(c, new Rng(runtime === 'etcd' ? 51 : 52));
        assert.equal(load.reads.size, READS);
        assert.ok(load.compactions > 0 && load.expiries > 0, JSON.stringify({ compactions: load.compactions, expiries: load.expiries }));
        await waitFor('the agent to store every revision', caughtUp, 30_000, 200);

        // An outage of the agent, longer than --max-time-uncertainty 1s, with a write inside it.
        const before = (await c.status()).header.revision;
        await stopAgent(agent);
        await sleep(1200);
        const inside = new Date().toISOString();
        await sleep(1000);
        await c.put('/p/during-the-outage', 'x');
        agent = startAgent(args);
        await waitFor('the agent to store the write of the outage', caughtUp, 30_000, 200);
        await stopAgent(agent);

        const cat = await readCatalog(store);
        assert.deepEqual(cat.clusters[0].holes, [], 'no gap: the compactions never reached the agent');
        assert.ok(cat.clusters[0].fulls.length >= 2, 'fulls after --full-after-events: restores start from different fulls');

        const refused = await restore(url, inside, path.join(dir, 'uncertain.db'), '--max-time-uncertainty', '1s');
        assert.equal(refused.code, 3, refused.stderr);
        assert.match(
          refused.stderr,
          new RegExp(
            `${inside} falls inside the \\S+ window of revision ${before + 1} .*wider than --max-time-uncertainty 1s; .*--accept-uncertain-time to restore revision ${before}`,
          ),
        );
        assert.ok(!fs.existsSync(path.join(dir, 'uncertain.db')));
        const accepted = await restore(url, inside, path.join(dir, 'accepted.db'), '--max-time-uncertainty', '1s', '--accept-uncertain-time');
        assert.equal(accepted.code, 0, accepted.stderr);
        assert.equal(await revisionOf(path.join(dir, 'accepted.db')), before);

        for (const [rev, want] of [...load.reads].sort((a, b) => a[0] - b[0])) {
          const out = path.join(dir, `at-${rev}.db`);
          const r = await restore(url, String(rev), out);
          assert.equal(r.code, 0, r.stderr);
          assert.equal(await revisionOf(out), rev);
          assert.deepEqual(await BackupFixture.restoredKeyspace(out, runtime, dir), want, `revision ${rev}`);
          fs.rmSync(out);
        }
      } finally {
        if (agent) await stopAgent(agent);
        c.close();
        store.close();
        await stopCluster();
        if (!process.env.LIFEBOAT_KEEP_TEST_DIRS) fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  );
}
