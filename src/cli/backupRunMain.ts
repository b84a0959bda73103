// `lifeboat backup run`, the long-running agent, run by bin/run.js without oclif
// (main): oclif's module, config and command loading held the agent about 6 MiB
// larger for good (an agent's target is 100 MiB). commands/backup/run.ts (its
// --help, oclif's runners) runs the same runAgent with the same flags, built from
// these tables.
import os from 'node:os';
import { AgentLock } from '../backup/agent/agentLock.js';
import { AgentMetrics } from '../backup/agent/agentMetrics.js';
import { BackupAgent } from '../backup/agent/backupAgent.js';
import { requireRootRole } from '../backup/agent/rootCheck.js';
import { Spool } from '../backup/agent/spool.js';
import { clientFor } from '../client/etcdClient.js';
import { InputError } from '../common/errors.js';
import { AGENT_FLAG_SPECS, checkSchedule, codecOf } from './backupAgentSpecs.js';
import { agentHandoff, givenSettings } from './backupHandoff.js';
import { openBackupStore, STORE_FLAG_SPECS, storeUrlOf, tagStoreError, type StoreFlagValues } from './backupStoreOpen.js';
import { CONNECTION_FLAGS, connectionFromFlags, endpointsFromFlags, WRITE_OUT_FLAG, type ConnectionFlags } from './connectionFlags.js';
import { EXIT, tagCommandError } from './exitCodes.js';
import { parseFlags, type FlagSpec } from './flagParser.js';
import { silenceTlsServerNameWarning } from './warnings.js';

// bin/run.js maps a failure to its exit code with this module's exitFor: the
// bundle's error classes are its own (serverEntry.ts says more).
export { exitFor } from './exitCodes.js';

/** Every flag of `backup run`: the connection's (EtcdCommand's), the store's and the agent's. */
export const BACKUP_RUN_FLAGS = { 'write-out': WRITE_OUT_FLAG, ...CONNECTION_FLAGS, ...STORE_FLAG_SPECS, ...AGENT_FLAG_SPECS } as const satisfies Record<
  string,
  FlagSpec
>;

export type AgentRunFlags = ConnectionFlags &
  StoreFlagValues & {
    /** after --discovery-srv, if given */
    endpoints: string;
    'spool-dir': string;
    compression: string;
    'encrypt-to'?: string[];
    'recipients-file'?: string;
    'full-schedule': string;
    'full-after-events': number;
    'full-after-bytes': number;
    'delta-interval': number;
    'segment-size': number;
    'hash-every': number;
    'spool-limit': number;
    'listen-metrics'?: string;
    'print-unit': boolean;
    force: boolean;
  };

/** Runs the agent until SIGTERM or SIGINT (or prints its unit with --print-unit); `argv` as given, for the unit. */
export async function runAgent(flags: AgentRunFlags, argv: readonly string[]): Promise<void> {
  const log = (line: string) => process.stdout.write(`${new Date().toISOString()} ${line}\n`);
  const url = storeUrlOf(flags);
  const schedule = checkSchedule(flags['full-schedule']);
  const codec = codecOf(flags);
  if (flags['delta-interval'] < 100) throw new InputError(`--delta-interval ${flags['delta-interval']}ms: give at least 100ms`);
  if (flags['print-unit']) {
    const valueFlags = new Set(
      Object.entries(BACKUP_RUN_FLAGS)
        .filter(([, f]) => f.type !== 'boolean')
        .map(([n]) => n),
    );
    const h = agentHandoff(givenSettings(argv, valueFlags), new URL(url).pathname.split('/').filter(Boolean).pop() ?? 'store');
    process.stdout.write(`--- ${h.envFile} (mode 0600) ---\n${h.envText}--- /etc/systemd/system/${h.unitName} ---\n${h.unitText}\n`);
    process.stdout.write(`Then: systemctl daemon-reload && systemctl enable --now ${h.unitName}\n`);
    return;
  }
  silenceTlsServerNameWarning();
  const conn = connectionFromFlags(flags);
  const endpoints = flags.endpoints
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const check = clientFor(endpoints, conn);
  try {
    await requireRootRole(check, conn.credentials?.user);
  } finally {
    check.close();
  }
  const metrics = new AgentMetrics();
  const spool = await Spool.open(flags['spool-dir']);
  let lastRetryLog = 0;
  const store = await openBackupStore(url, flags, (e) => {
    // Said at once (an outage shows in /health), then at most every 30 s.
    metrics.storeFailing = true;
    if (Date.now() - lastRetryLog < 30_000) return;
    lastRetryLog = Date.now();
    log(`store: ${e.op} ${e.key} failed (${e.error.message}); retrying; ${spool.pending().length} object(s), ${spool.bytes} bytes wait in the spool`);
  });
  metrics.storeWrapperRetries = () => store.retries;
  const lock = await AgentLock.take(store, flags.force, log);
  let agent: BackupAgent | undefined;
  const onSignal = (sig: string) => {
    log(`${sig}: stopping`);
    agent?.stop();
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  try {
    const aborted = await store.abortStaleUploads(15 * 60_000);
    if (aborted > 0) log(`aborted ${aborted} upload(s) a killed agent left half done`);
    if (flags['listen-metrics']) await metrics.listen(flags['listen-metrics']);
    log(
      `backup agent on ${os.hostname()} (pid ${process.pid}): store ${store.url}, spool ${spool.dir}${spool.pending().length ? ` (${spool.pending().length} object(s) waiting)` : ''}, full schedule "${schedule}", segments every ${flags['delta-interval']}ms${flags['listen-metrics'] ? `, metrics on ${flags['listen-metrics']}` : ''}`,
    );
    agent = new BackupAgent({
      endpoints,
      connection: conn,
      store,
      spool,
      lock,
      codec,
      deltaIntervalMs: flags['delta-interval'],
      segmentBytes: flags['segment-size'],
      fullSchedule: schedule,
      fullAfterEvents: flags['full-after-events'],
      fullAfterBytes: flags['full-after-bytes'],
      hashEvery: flags['hash-every'],
      spoolLimit: flags['spool-limit'],
      metrics,
      log,
    });
    await agent.run();
  } finally {
    metrics.close();
    await lock.release().catch((e: Error) => log(`could not release the lock: ${e.message}`));
    store.close();
    log('stopped');
  }
}

/** Runs `lifeboat backup run` from its arguments (after `backup run`); resolves to the exit code. Errors throw tagged as oclif's would be. */
export async function main(argv: string[]): Promise<number> {
  try {
    const { flags } = parseFlags(argv, BACKUP_RUN_FLAGS, { commandId: 'backup:run' });
    flags.endpoints = await endpointsFromFlags(flags);
    await runAgent(flags as unknown as AgentRunFlags, argv);
    return EXIT.OK;
  } catch (err) {
    tagStoreError(err);
    tagCommandError(err, 'backup:run');
    throw err;
  }
}
