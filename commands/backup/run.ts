import os from 'node:os';
import { AgentLock } from '../../src/backup/agent/agentLock.js';
import { AgentMetrics } from '../../src/backup/agent/agentMetrics.js';
import { BackupAgent } from '../../src/backup/agent/backupAgent.js';
import { requireRootRole } from '../../src/backup/agent/rootCheck.js';
import { Spool } from '../../src/backup/agent/spool.js';
import { AGENT_FLAGS, checkSchedule, codecOf } from '../../src/cli/backupAgentFlags.js';
import { agentHandoff, givenSettings } from '../../src/cli/backupHandoff.js';
import { openBackupStore, STORE_FLAGS, storeUrlOf, tagStoreError } from '../../src/cli/backupStoreFlags.js';
import { connectionFromFlags, EtcdCommand } from '../../src/cli/baseCommand.js';
import { clientFor } from '../../src/client/etcdClient.js';

export default class BackupRun extends EtcdCommand {
  static override summary = 'Run the backup agent: every revision off the host within seconds, fulls on a schedule.';

  static override description = `A long-running agent, one per store. It takes the store's lock (refused while another agent holds it, with that agent's host and start time; --force takes it), then follows one watch over the whole keyspace from the last revision in the store + 1 and writes the revisions, whole and in order with the time window each happened in, as segments every --delta-interval (an idle cluster writes none), lease grants and revocations with them. Fulls (Maintenance.Snapshot, the plain snapshot bytes) on --full-schedule, after --full-after-events or --full-after-bytes, and at once when the chain breaks (a compaction past the agent, a watch cancelled by the server, a new cluster ID), which records the gap. Every object goes to --spool-dir durably first, then to the store (data, then its manifest); while the store is down they wait there, up to --spool-limit, past which the agent stops reading the watch and says how far behind it is: a committed revision is never dropped. Refuses (exit 3) a --user without the root role: etcd 3.4 serves Snapshot and HashKV to root only. SIGTERM or SIGINT: the open segment is committed, the spool uploaded if the store takes it, the lock released.`;

  static override examples = [
    '<%= config.bin %> backup run --endpoints 10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379 --store file:///mnt/backups/etcd --spool-dir /var/lib/lifeboat/backup-spool',
    '<%= config.bin %> backup run --endpoints https://10.0.0.1:2379 --cacert ca.pem --user backup --password-file /etc/lifeboat/backup.pass --store file:///mnt/backups/etcd --spool-dir /var/lib/lifeboat/spool --encrypt-to age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p --listen-metrics http://127.0.0.1:9479',
    '<%= config.bin %> backup run --endpoints 10.0.0.1:2379 --store file:///mnt/backups/etcd --spool-dir /var/lib/lifeboat/spool --print-unit',
  ];

  static override flags = {
    ...STORE_FLAGS,
    ...AGENT_FLAGS,
  };

  protected override async catch(err: Error & { commandId?: string; oclif?: { exit?: number } }): Promise<unknown> {
    tagStoreError(err);
    return super.catch(err);
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(BackupRun);
    const url = storeUrlOf(flags);
    const schedule = checkSchedule(flags['full-schedule']);
    const codec = codecOf(flags);
    if (flags['delta-interval'] < 100) this.error(`--delta-interval ${flags['delta-interval']}ms: give at least 100ms`, { exit: 2 });
    if (flags['print-unit']) {
      const valueFlags = new Set(
        Object.entries({ ...BackupRun.baseFlags, ...BackupRun.flags })
          .filter(([, f]) => (f as { type: string }).type !== 'boolean')
          .map(([n]) => n),
      );
      const h = agentHandoff(givenSettings(this.argv, valueFlags), new URL(url).pathname.split('/').filter(Boolean).pop() ?? 'store');
      this.log(`--- ${h.envFile} (mode 0600) ---\n${h.envText}--- /etc/systemd/system/${h.unitName} ---\n${h.unitText}`);
      this.log(`Then: systemctl daemon-reload && systemctl enable --now ${h.unitName}`);
      return;
    }
    const conn = connectionFromFlags(flags);
    const endpoints = flags.endpoints
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean);
    const log = (line: string) => process.stdout.write(`${new Date().toISOString()} ${line}\n`);
    const check = clientFor(endpoints, conn);
    try {
      await requireRootRole(check, conn.credentials?.user);
    } finally {
      check.close();
    }
    const metrics = new AgentMetrics();
    const store = await openBackupStore(url, flags);
    metrics.storeWrapperRetries = () => store.retries;
    const spool = await Spool.open(flags['spool-dir']);
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
}
