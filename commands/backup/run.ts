// `lifeboat backup run` for --help and oclif's runners: bin/run.js runs it
// without oclif (src/cli/backupRunMain.ts), from the same flags and runAgent.
import { AGENT_FLAGS } from '../../src/cli/backupAgentFlags.js';
import { runAgent } from '../../src/cli/backupRunMain.js';
import { STORE_FLAGS, tagStoreError } from '../../src/cli/backupStoreFlags.js';
import { EtcdCommand } from '../../src/cli/baseCommand.js';

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
    await runAgent(flags, this.argv);
  }
}
