// `npm run bench -- cluster`: a 3-member real etcd 3.4 and a 3-member Lifeboat on
// 127.0.0.1, one after the other, data dirs on the same disk (os.tmpdir()), driven
// by the same load generator; figures side by side in bench/results/<date>.{json,md,svg}.
// See parseClusterOptions for the flags and docs/benchmarks.md for the method and figures.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BIN } from '../test/support/lifeboatCluster.js';
import { sleep } from '../src/common/sleep.js';
import { ROOT, requireEtcdTools, run as runTool } from '../test/support/tools.js';
import { CHECK_PERF_PREFIX, checkPerf, type CheckPerfResult } from './checkPerf.js';
import { cleanupAll, onCleanup } from './cleanup.js';
import { parseClusterOptions, type ClusterOptions } from './clusterOptions.js';
import { FigureSet } from './figures.js';
import { clearAndCompact } from './compactStore.js';
import { fillKeys } from './fill.js';
import { measureCatchUp } from './learnerCatchUp.js';
import { runLoad, type LoadResult } from './loadGenerator.js';
import { describeMachine, describeMachineLine } from './machine.js';
import { fmtLoop, observed, type Observed } from './loadObserver.js';
import { memoryParts, scrapeAll, smapsRollup, type LoopDelay } from './memberMetrics.js';
import { cpuTotal, maxRss, rssMiB, sampleRss } from './memberRss.js';
import { startNodeFloor } from './nodeFloor.js';
import { startNoopServers } from './noopServer.js';
import { measureRecovery } from './recoveryFigure.js';
import { measureSnapshot } from './snapshotFigures.js';
import { formatStalls } from './stalls.js';
import { writeReport } from './report.js';
import { warmUp } from './warmUp.js';
import { benchCerts, startEtcd, startLifeboat, type BenchCluster, type SystemName } from './systems.js';
import type { TestCerts } from '../test/support/certs.js';

const PUT_PREFIX = 'bench/put/';
/** A system whose 100-client puts/s come this close to the generator's ceiling is measuring the generator. */
const GENERATOR_BOUND = 0.8;

const t0 = performance.now();
const log = (s: string) => console.log(`[${((performance.now() - t0) / 1000).toFixed(0).padStart(4)}s] ${s}`);
const fmt = (r: LoadResult) =>
  `${Math.round(r.perSecond).toLocaleString('en-US')}/s, p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms, p99.9 ${r.p999Ms.toFixed(1)} ms, max ${r.maxMs.toFixed(1)} ms${r.errors ? `, ${r.errors} errors (${r.firstError})` : ''}`;
/** etcd's side of a figure only Lifeboat has (its event loop, its runtime's memory). */
const NO_EVENT_LOOP = 'n/a (Go)';

interface Ceiling {
  clients: number;
  result: LoadResult;
}

/** The tools' own ceilings on this machine: our load generator's, and each check perf load's. */
async function measureCeiling(o: ClusterOptions): Promise<{ loads: Ceiling[]; checkPerf: CheckPerfResult[] }> {
  const servers = await startNoopServers();
  const unregister = onCleanup(() => servers.stop());
  try {
    const out: Ceiling[] = [];
    for (const clients of new Set([1, Math.max(...o.putClients)])) {
      const result = await runLoad({
        endpoints: servers.endpoints,
        clients,
        workers: o.workers,
        op: { kind: 'put', keyPrefix: PUT_PREFIX, keySpace: o.keySpace },
        valueSize: o.valueSize,
        durationMs: o.seconds * 1000,
      });
      log(`generator ceiling (${servers.endpoints.length} no-op gRPC server processes, ${o.workers} worker processes), ${clients} clients: ${fmt(result)}`);
      out.push({ clients, result });
    }
    // etcdctl paces check perf with a rate limiter; where it cannot keep its rate even
    // against servers that answer at once, no member can pass that load on this machine.
    const checkPerfCeiling: CheckPerfResult[] = [];
    for (const perfLoad of o.checkPerf) {
      try {
        const r = await checkPerf(servers.endpoints, perfLoad);
        log(`check perf ceiling (no-op servers): --load=${perfLoad}: ${r.pass ? 'PASS' : 'FAIL'}, ${r.writesPerSecond} writes/s`);
        checkPerfCeiling.push(r);
      } catch (e) {
        // A ceiling not measured loses a header line, not the run.
        log(`check perf ceiling (no-op servers): --load=${perfLoad}: ${(e as Error).message}`);
      }
    }
    return { loads: out, checkPerf: checkPerfCeiling };
  } finally {
    servers.stop();
    unregister();
  }
}

async function benchSystem(
  name: SystemName,
  o: ClusterOptions,
  certs: TestCerts | undefined,
  figures: FigureSet,
  scratch: string,
  ceiling: Ceiling[],
  raw: Record<string, unknown>,
  before?: string,
): Promise<void> {
  const label = before ? `${name} (--before ${path.basename(before)})` : name;
  log(`${label}: starting 3 members`);
  const sys = name === 'etcd' ? await startEtcd(certs) : await startLifeboat(before, certs);
  const tls = sys.tls;
  const floor = startNodeFloor();
  try {
    const up = Date.now();
    await sleep(2000);
    figures.set(name, { id: 'rss-idle', label: 'member RSS, idle (fresh)', unit: 'MiB', better: 'lower' }, maxRss(sys.pids()));
    // And once V8's memory-reducing collection, about 10 s in, has given back what start-up left.
    await sleep(o.idleSettleSeconds * 1000 - (Date.now() - up));
    figures.set(
      name,
      { id: 'rss-idle-settled', label: `member RSS, idle ${o.idleSettleSeconds} s after start`, unit: 'MiB', better: 'lower' },
      maxRss(sys.pids()),
    );
    await idleBreakdown(name, label, sys, floor, figures, raw);
    floor.stop();
    const endpoints = await sys.endpoints();
    const load = (clients: number, op: Parameters<typeof runLoad>[0]['op']) =>
      runLoad({ endpoints, tls, clients, workers: o.workers, op, valueSize: o.valueSize, durationMs: o.seconds * 1000 });
    const put = { kind: 'put', keyPrefix: PUT_PREFIX, keySpace: o.keySpace } as const;
    await warmUp({ endpoints, tls, workers: o.workers, op: put, valueSize: o.valueSize }, o.warmupSeconds);

    const maxClients = Math.max(...o.putClients);
    let leaderChangesAll = 0;
    for (const clients of o.putClients) {
      const rss = clients === maxClients ? sampleRss(sys.pids()) : undefined;
      const { r, seen } = await observed(sys, () => load(clients, put));
      log(`${label}: puts, ${clients} clients: ${fmt(r)}; leader changes ${seen.leaderChanges}`);
      logSeen(label, seen);
      raw[`put-${clients}`] = { ...r, ...seen };
      leaderChangesAll += seen.leaderChanges;
      setSeenFigures(name, figures, `put-${clients}`, `${clients}-client puts`, r, seen);
      const note = r.errors ? `(${r.errors} errors)` : undefined;
      figures.set(name, { id: `put-${clients}-rate`, label: `puts/s, ${clients} clients`, unit: '/s', better: 'higher', note }, r.perSecond);
      figures.set(name, { id: `put-${clients}-p50`, label: `put p50, ${clients} clients`, unit: 'ms', better: 'lower' }, r.p50Ms);
      figures.set(name, { id: `put-${clients}-p99`, label: `put p99, ${clients} clients`, unit: 'ms', better: 'lower' }, r.p99Ms);
      figures.set(name, { id: `put-${clients}-max`, label: `put max, ${clients} clients`, unit: 'ms', better: 'lower' }, r.maxMs);
      if (rss) figures.set(name, { id: 'rss-load', label: `member RSS, ${clients}-client puts`, unit: 'MiB', better: 'lower' }, rss.stop());
      const top = ceiling.find((c) => c.clients === clients);
      if (top && r.perSecond > GENERATOR_BOUND * top.result.perSecond)
        log(
          `WARNING: ${name} at ${clients} clients is within ${Math.round((1 - GENERATOR_BOUND) * 100)}% of the generator's ceiling; the figure is a lower bound`,
        );
    }

    for (const serializable of [false, true]) {
      for (const clients of o.getClients) {
        const kind = serializable ? 'serializable' : 'linearizable';
        const { r, seen } = await observed(sys, () => load(clients, { kind: 'get', serializable, keyPrefix: PUT_PREFIX, keySpace: o.keySpace }));
        log(`${label}: ${kind} gets, ${clients} clients: ${fmt(r)}; leader changes ${seen.leaderChanges}`);
        logSeen(label, seen);
        raw[`get-${kind}-${clients}`] = { ...r, ...seen };
        leaderChangesAll += seen.leaderChanges;
        figures.set(name, { id: `get-${kind}-${clients}-rate`, label: `${kind} gets/s, ${clients} clients`, unit: '/s', better: 'higher' }, r.perSecond);
        figures.set(name, { id: `get-${kind}-${clients}-p99`, label: `${kind} get p99, ${clients} clients`, unit: 'ms', better: 'lower' }, r.p99Ms);
      }
    }
    figures.set(name, { id: 'leader-changes', label: 'leader changes during the put and get loads', unit: '', better: 'lower' }, leaderChangesAll);

    for (const perfLoad of o.checkPerf) {
      log(`${label}: etcdctl check perf --load=${perfLoad} (60 s)`);
      let r: CheckPerfResult;
      const cpuBefore = cpuTotal(sys.pids());
      try {
        r = await checkPerf(endpoints, perfLoad, tls);
      } catch (e) {
        // One figure lost is better than the whole run: record why and go on.
        log(`${label}: check perf ${perfLoad}: ${(e as Error).message}`);
        raw[`check-perf-${perfLoad}`] = { error: (e as Error).message };
        continue;
      }
      log(
        `${name}: check perf ${perfLoad}: ${r.pass ? 'PASS' : 'FAIL'}, ${r.writesPerSecond} writes/s${r.failures.length ? ` (${r.failures.join('; ')})` : ''}`,
      );
      raw[`check-perf-${perfLoad}`] = r;
      figures.set(
        name,
        { id: `check-perf-${perfLoad}`, label: `etcdctl check perf --load=${perfLoad}, writes/s`, unit: '', better: 'higher' },
        r.writesPerSecond,
        r.pass ? 'PASS' : 'FAIL',
      );
      figures.set(
        name,
        { id: `check-perf-${perfLoad}-cpu`, label: `etcdctl check perf --load=${perfLoad}, CPU of all members`, unit: 's', better: 'lower' },
        cpuTotal(sys.pids()) - cpuBefore,
      );
    }

    // The stores for snapshots hold the fill keys and no history of the load tests.
    await clearAndCompact(endpoints, ['bench/', CHECK_PERF_PREFIX], tls);
    // The CLIs' own start-up is part of every save and restore time: measured alone here.
    const cli =
      name === 'etcd' ? await runTool('etcdctl', ['version']) : await runTool(process.execPath, [before ? path.join(before, 'bin', 'run.js') : BIN, 'version']);
    figures.set(name, { id: 'cli-start', label: 'CLI start-up (`version`), part of save/restore times', unit: 's', better: 'lower' }, cli.ms / 1000);
    let filled = 0;
    let fillSeconds = 0;
    const fillTo = async (keys: number) => {
      if (keys <= filled) return;
      log(`${label}: filling to ${keys.toLocaleString('en-US')} keys`);
      const r = await fillKeys({ endpoints, tls, from: filled, to: keys, workers: o.workers, valueSize: o.valueSize });
      fillSeconds += r.seconds;
      filled = keys;
    };
    for (const keys of o.snapshotKeys) {
      await fillTo(keys);
      const s = await measureSnapshot(sys, endpoints[0], keys, scratch);
      log(
        `${name}: snapshot of ${keys.toLocaleString('en-US')} keys: ${(s.bytes / 1e6).toFixed(1)} MB saved in ${s.saveSeconds.toFixed(2)} s (${s.saveMBps.toFixed(1)} MB/s), restored in ${s.restoreSeconds.toFixed(2)} s`,
      );
      raw[`snapshot-${keys}`] = s;
      const k = keys >= 1e6 ? `${keys / 1e6}M` : keys >= 1e3 ? `${keys / 1e3}k` : String(keys);
      figures.set(name, { id: `snapshot-size-${keys}`, label: `snapshot size, ${k} keys`, unit: 'MB', better: 'lower' }, s.bytes / 1e6);
      figures.set(name, { id: `snapshot-save-${keys}`, label: `snapshot save, ${k} keys`, unit: 'MB/s', better: 'higher' }, s.saveMBps);
      figures.set(name, { id: `snapshot-restore-${keys}`, label: `snapshot restore, ${k} keys`, unit: 's', better: 'lower' }, s.restoreSeconds);
    }
    if (o.learnerKeys > 0) {
      await fillTo(o.learnerKeys);
      const k = o.learnerKeys >= 1e6 ? `${o.learnerKeys / 1e6}M` : `${o.learnerKeys / 1e3}k`;
      log(`${label}: learner catch-up on ${k} keys`);
      try {
        const r = await measureCatchUp(sys, endpoints[0], o.learnerTimeoutSeconds * 1000);
        log(`${label}: learner caught up to index ${r.targetIndex} in ${r.seconds.toFixed(2)} s`);
        raw.learner = r;
        figures.set(name, { id: 'learner', label: `learner catch-up, ${k} keys`, unit: 's', better: 'lower' }, r.seconds);
      } catch (e) {
        // A learner that never catches up is a finding, not a reason to lose the run.
        log(`${label}: learner: ${(e as Error).message}`);
        raw.learner = { error: (e as Error).message };
        figures.set(
          name,
          { id: 'learner', label: `learner catch-up, ${k} keys`, unit: 's', better: 'lower' },
          NaN,
          `not caught up in ${o.learnerTimeoutSeconds} s`,
        );
      }
    }
    if (filled > 0)
      figures.set(name, { id: 'fill', label: 'bulk load (Txns of 128 puts, 32 clients), keys/s', unit: '/s', better: 'higher' }, filled / fillSeconds);
  } finally {
    floor.stop();
    log(`${label}: stopping`);
    await sys.stop();
  }
}

function logSeen(label: string, seen: Observed): void {
  if (seen.loop.some(Boolean)) log(`${label}:   event-loop delay: ${fmtLoop(seen.loop)}`);
  if (seen.loop.some(Boolean)) log(`${label}:   ${formatStalls(seen.stalls)}`);
}

/** A load point's tail, leader changes, and (Lifeboat's only) event-loop delay and stalls, as figures. */
function setSeenFigures(name: SystemName, figures: FigureSet, id: string, what: string, r: LoadResult, seen: Observed): void {
  figures.set(name, { id: `${id}-p999`, label: `${what}: p99.9`, unit: 'ms', better: 'lower' }, r.p999Ms);
  figures.set(name, { id: `${id}-leader-changes`, label: `${what}: leader changes`, unit: '', better: 'lower' }, seen.leaderChanges);
  const loops = seen.loop.filter((d): d is LoopDelay => d !== undefined);
  const loopOnly = (row: { id: string; label: string; unit: string }, v: number) =>
    loops.length ? figures.set(name, { ...row, better: 'lower' }, v) : figures.set(name, { ...row, better: 'lower' }, NaN, NO_EVENT_LOOP);
  loopOnly({ id: `${id}-loop-p99`, label: `${what}: event-loop delay p99, worst member`, unit: 'ms' }, Math.max(...loops.map((d) => d.p99Ms)));
  loopOnly({ id: `${id}-loop-max`, label: `${what}: event-loop delay max, worst member`, unit: 'ms' }, Math.max(...loops.map((d) => d.maxMs)));
  loopOnly({ id: `${id}-stalls`, label: `${what}: stalls over 50 ms, 3 members`, unit: '' }, seen.stalls.count);
  loopOnly({ id: `${id}-stalls-attributed`, label: `${what}: stalls attributed to a cause`, unit: '%' }, seen.stalls.attributed * 100);
  loopOnly({ id: `${id}-stall-on-cpu-max`, label: `${what}: longest stall on CPU`, unit: 'ms' }, seen.stalls.longestOnCpuMs);
}

/**
 * What the largest idle member's RSS is made of, beside an empty Node process
 * measured at the same moment: RSS, PSS and private memory of both (smaps_rollup),
 * and for Lifeboat the parts its /metrics names (V8 heap, code, external and array
 * buffers, SQLite's page cache, the watchdog's worker).
 */
async function idleBreakdown(
  name: SystemName,
  label: string,
  sys: BenchCluster,
  floor: ReturnType<typeof startNodeFloor>,
  figures: FigureSet,
  raw: Record<string, unknown>,
): Promise<void> {
  const pids = sys.pids();
  const rss = pids.map(rssMiB);
  const i = rss.indexOf(Math.max(...rss));
  const [samples] = await scrapeAll([sys.metricsUrls()[i]], sys.tls);
  const member = smapsRollup(pids[i]);
  const empty = await floor.measure();
  const parts = memoryParts(samples);
  raw.idle = { member: `m${i + 1}`, ...member, parts, floor: empty };
  const row = (id: string, label: string) => ({ id: `idle-${id}`, label: `idle member: ${label}`, unit: 'MiB', better: 'lower' as const });
  figures.set(name, row('rss', 'RSS (smaps_rollup)'), member.rss);
  figures.set(name, row('pss', 'PSS'), member.pss);
  figures.set(name, row('private', 'private memory'), member.private);
  figures.set(name, row('floor-rss', 'an empty Node process beside it, RSS'), empty.rss);
  figures.set(name, row('over-floor', 'RSS over the empty Node process'), member.rss - empty.rss);
  const lifeboatOnly = (id: string, label: string, v: number | undefined) =>
    v === undefined ? figures.set(name, row(id, label), NaN, NO_EVENT_LOOP) : figures.set(name, row(id, label), v);
  lifeboatOnly('heap-used', 'V8 heap used', parts?.heapUsed);
  lifeboatOnly('heap-total', 'V8 heap total', parts?.heapTotal);
  lifeboatOnly('code-space', 'V8 code space', parts?.codeSpace);
  lifeboatOnly('external', 'external (Buffers, SQLite objects)', parts?.external);
  lifeboatOnly('array-buffers', 'of which array buffers', parts?.arrayBuffers);
  lifeboatOnly('sqlite-cache', 'SQLite page cache, at most', parts?.sqliteCacheBound);
  const worker = { ...row('watchdog-worker', "stall watchdog's worker started (1) or not (0)"), unit: '' };
  if (parts) figures.set(name, worker, parts.watchdogWorker ? 1 : 0);
  else figures.set(name, worker, NaN, NO_EVENT_LOOP);
  const f = (v: number) => v.toFixed(1);
  log(
    `${label}: idle member m${i + 1}: RSS ${f(member.rss)} MiB, PSS ${f(member.pss)}, private ${f(member.private)}; an empty Node process beside it: RSS ${f(empty.rss)}, PSS ${f(empty.pss)}, private ${f(empty.private)}; over it: RSS ${f(member.rss - empty.rss)} MiB`,
  );
  if (parts) {
    const named = parts.heapTotal + parts.external + parts.sqliteCacheBound;
    log(
      `${label}:   V8 heap ${f(parts.heapUsed)} used of ${f(parts.heapTotal)} (floor ${f(empty.heapUsed)} of ${f(empty.heapTotal)}; code space ${f(parts.codeSpace)}), external ${f(parts.external)} (floor ${f(empty.external)}; array buffers ${f(parts.arrayBuffers)}), SQLite page cache at most ${f(parts.sqliteCacheBound)}, stall watchdog worker ${parts.watchdogWorker ? 'running (about 12 MiB)' : 'not started'}; the rest (native code and libraries, malloc arenas, stacks) ${f(member.rss - named)}`,
    );
    log(
      `${label}:   what can go: heap over the floor ${f(parts.heapTotal - empty.heapTotal)} MiB, external over the floor ${f(parts.external - empty.external)} MiB${parts.watchdogWorker ? ', the watchdog worker' : ''}; outside the heap and external memory it holds ${f(member.rss - named - (empty.rss - empty.heapTotal - empty.external))} MiB more than the floor (the code it loads: gRPC, SQLite, its own; malloc arenas)`,
    );
  }
}

export async function run(args: string[]): Promise<void> {
  let o: ClusterOptions;
  try {
    o = parseClusterOptions(args);
  } catch (e) {
    console.error((e as Error).message);
    process.exit(2);
  }
  requireEtcdTools();
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-bench-'));
  onCleanup(() => fs.rmSync(scratch, { recursive: true, force: true }));
  const machine = describeMachine(os.tmpdir());
  log(`machine: ${describeMachineLine(machine)}`);
  const figures = new FigureSet();
  const raw: Record<string, unknown> = {};
  let written = false;
  const report = (status: string) => {
    if (written) return;
    written = true;
    const ceiling = (raw.ceiling as Ceiling[] | undefined)?.at(-1)?.result;
    const checkPerfCeiling = raw.checkPerfCeiling as CheckPerfResult[] | undefined;
    const base = writeReport({
      tag: o.tag,
      outDir: o.outDir ?? path.join(ROOT, 'bench', 'results'),
      options: o,
      machine,
      figures: figures.figures,
      raw,
      status,
      ceiling,
      checkPerfCeiling,
      minutes: (performance.now() - t0) / 60_000,
    });
    log(`wrote ${base}.json, .md and .svg`);
  };
  // Registered first, so on Ctrl-C it runs last: whatever was measured is kept.
  onCleanup(() => report('interrupted'));
  try {
    const certs = o.tls ? await benchCerts() : undefined;
    const { loads: ceiling, checkPerf: checkPerfCeiling } = await measureCeiling(o);
    raw.ceiling = ceiling;
    raw.checkPerfCeiling = checkPerfCeiling;
    for (const name of o.systems) {
      // The older build's figures are kept in the raw results, next to this build's.
      if (name === 'lifeboat' && o.before) {
        const beforeFigures = new FigureSet();
        await benchSystem(name, o, certs, beforeFigures, scratch, ceiling, (raw.before = { dir: o.before }), o.before);
        (raw.before as Record<string, unknown>).figures = beforeFigures.figures;
      }
      await benchSystem(name, o, certs, figures, scratch, ceiling, (raw[name] = {}));
    }
    if (o.recoveryKeys > 0) {
      const r = await measureRecovery({ keys: o.recoveryKeys, stabilizationSeconds: o.stabilizationSeconds, workers: o.workers, valueSize: o.valueSize, log });
      log(
        `lifeboat: recovered ${r.recoveredKeys} keys to ${r.voters} voters in ${r.totalSeconds.toFixed(2)} s (${r.toolSeconds.toFixed(2)} s tool time + ${r.stabilizationSeconds} s configured stabilization)`,
      );
      raw.recovery = r;
      const k = o.recoveryKeys >= 1e3 ? `${o.recoveryKeys / 1e3}k` : String(o.recoveryKeys);
      figures.set(
        'lifeboat',
        { id: 'recovery-tool', label: `full recovery, ${k} keys: tool time`, unit: 's', better: 'lower', note: '(etcd: no scripted equivalent)' },
        r.toolSeconds,
      );
      figures.set(
        'lifeboat',
        { id: 'recovery-waits', label: `full recovery, ${k} keys: configured stabilization waits`, unit: 's', better: 'lower' },
        r.stabilizationSeconds,
      );
    }
    report('complete');
  } catch (e) {
    report(`failed: ${(e as Error).message}`);
    throw e;
  } finally {
    await cleanupAll();
  }
}
