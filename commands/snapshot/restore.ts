import { Args, Flags } from '#oclif-core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { progressBar } from '../../src/cli/progressBar.js';
import { restoreSnapshot, type RestoreResult } from '../../src/recovery/restore.js';

export default class SnapshotRestore extends BaseCommand {
  static override description = `Restore a snapshot into a new data dir for a one-member cluster with a new cluster ID (recording the old one as its parent). The data dir must not exist or be empty; it is built in DIR.part and renamed. Prints the command that starts the member. Also restores a real etcd snapshot (or, with --skip-hash-check, a raw member/snap/db): every key with its revisions, versions and lease, and the leases.`;

  static override examples = [
    '<%= config.bin %> snapshot restore backup.db --data-dir /var/lib/lifeboat/m1 --name m1 --initial-advertise-peer-urls http://10.0.0.1:2380',
    '<%= config.bin %> snapshot restore backup.db --data-dir /var/lib/lifeboat/m1 --name m1 --initial-advertise-peer-urls http://10.0.0.1:2380 --bump-revision 1000000 --mark-compacted',
    '<%= config.bin %> snapshot restore /backup/etcd/member/snap/db --skip-hash-check --data-dir /var/lib/lifeboat/m1 --name m1 --initial-advertise-peer-urls http://10.0.0.1:2380',
  ];

  static override args = {
    file: Args.string({ description: 'the snapshot file', required: true }),
  };

  static override flags = {
    'data-dir': Flags.string({ description: 'the new data dir (must not exist or be empty)', required: true }),
    name: Flags.string({ description: 'name of the restored member', required: true }),
    'initial-advertise-peer-urls': Flags.string({ description: "the restored member's peer URLs", required: true }),
    'initial-cluster-token': Flags.string({ description: 'token the member ID derives from', default: 'etcd-cluster' }),
    'bump-revision': Flags.integer({ description: 'raise the store revision by N so no client sees it go back (needs --mark-compacted)', default: 0 }),
    'mark-compacted': Flags.boolean({
      description: 'mark every revision before the new one compacted, so watchers relist (needs --bump-revision)',
      default: false,
    }),
    'skip-hash-check': Flags.boolean({ description: 'accept a file without a sha256 trailer (a raw kv.db or etcd member/snap/db copy)', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(SnapshotRestore);
    // On a terminal, the bytes copied (a Lifeboat snapshot); nothing in scripts.
    const bar = progressBar('restore');
    const result = await restoreSnapshot(args.file, {
      onBytes: (done, total) => bar.update(done, total),
      dataDir: flags['data-dir'],
      name: flags.name,
      initialAdvertisePeerUrls: flags['initial-advertise-peer-urls'].split(',').map((s) => s.trim()),
      initialClusterToken: flags['initial-cluster-token'],
      bumpRevision: flags['bump-revision'],
      markCompacted: flags['mark-compacted'],
      skipHashCheck: flags['skip-hash-check'],
    }).finally(() => bar.finish());
    this.print(flags['write-out'], result, (r: RestoreResult) =>
      [
        `Restored ${r.keys} keys at revision ${r.revision} into ${r.dataDir}`,
        `member ${r.memberId} in new cluster ${r.clusterId} (parent ${r.parentClusterId})`,
        ...(r.notCarriedOver ?? []).map((n) => `not carried over: ${n}`),
        'Start it with:',
        `  ${r.serverCommand}`,
      ].join('\n'),
    );
  }
}
