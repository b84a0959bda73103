import { backupStatus, type BackupStatus } from '../../src/backup/backupStatus.js';
import { openBackupStore, STORE_ARG, STORE_FLAGS, storeUrlOf, tagStoreError } from '../../src/cli/backupStoreFlags.js';
import { EtcdCommand } from '../../src/cli/baseCommand.js';

const ago = (s: number) => (s < 120 ? `${s}s ago` : s < 7200 ? `${Math.round(s / 60)}m ago` : `${(s / 3600).toFixed(1)}h ago`);

function render(s: BackupStatus): string {
  const lines = [`store ${s.store}`];
  lines.push(s.agent ? `agent         running on ${s.agent.host} (pid ${s.agent.pid}, since ${s.agent.startedAt})` : 'agent         none holds the lock');
  if (s.clusters.length === 0) lines.push('no backups in the store');
  for (const c of s.clusters) {
    lines.push(`cluster ${c.clusterId}`);
    lines.push(
      c.lastFull ? `  last full     revision ${c.lastFull.revision}, taken ${c.lastFull.takenAt} (${ago(c.lastFull.ageSeconds)})` : '  last full     none',
    );
    lines.push(
      c.lastSegment
        ? `  last segment  revisions ${c.lastSegment.fromRevision}..${c.lastSegment.toRevision}, seen ${c.lastSegment.lastSeenAt} (${ago(c.lastSegment.ageSeconds)})`
        : '  last segment  none',
    );
    lines.push(`  stored up to  revision ${c.lastStoredRevision}${c.gaps ? ` (${c.gaps} gap(s) recorded: see backup list)` : ''}`);
    if (c.lag)
      lines.push(`  lag           ${c.lag.revisions} revision(s), ${c.lag.seconds}s (the cluster is at revision ${c.lag.headRevision}, via ${c.lag.endpoint})`);
  }
  if (s.liveClusterNotInStore) lines.push(`the cluster at --endpoints (${s.liveClusterNotInStore}) has no backup in this store`);
  return lines.join('\n');
}

export default class BackupStatusCommand extends EtcdCommand {
  static override summary =
    "How old the newest backup is: the last full, the last segment, the agent holding the store's lock, and (with --endpoints) the lag.";

  static override description = `Reads the store's manifests (objects without one do not count). Per cluster ID: the last full and the last segment with their times and ages, the last stored revision and how many gaps are recorded; the agent holding the store's lock, if any. With --endpoints (or LIFEBOAT_ENDPOINTS / ETCDCTL_ENDPOINTS), also how far the store is behind that cluster: revisions, and seconds since the agent saw the last stored revision when the cluster has moved on.`;

  static override examples = [
    '<%= config.bin %> backup status --store file:///mnt/backups/etcd',
    '<%= config.bin %> backup status s3://backups/etcd --s3-endpoint https://minio.example:9000 --endpoints 10.0.0.1:2379 -w json',
  ];

  static override args = STORE_ARG;

  static override flags = { ...STORE_FLAGS };

  protected override async catch(err: Error & { commandId?: string; oclif?: { exit?: number } }): Promise<unknown> {
    tagStoreError(err);
    return super.catch(err);
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(BackupStatusCommand);
    const store = await openBackupStore(storeUrlOf(flags, args.store), flags);
    // The lag only when the operator named a cluster: the flag's default (127.0.0.1:2379) is not one.
    const named =
      this.argv.some((a) => a === '--endpoints' || a.startsWith('--endpoints=')) || !!process.env.LIFEBOAT_ENDPOINTS || !!process.env.ETCDCTL_ENDPOINTS;
    try {
      this.print(flags['write-out'], await backupStatus(store, named ? this.client(flags) : undefined), render);
    } finally {
      store.close();
    }
  }
}
