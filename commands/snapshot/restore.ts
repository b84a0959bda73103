import { Args } from '#oclif-core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { oclifFlag } from '../../src/cli/oclifFlag.js';
import { main, RESTORE_FLAGS } from '../../src/cli/snapshotRestoreRun.js';

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

  static override flags = Object.fromEntries(Object.entries(RESTORE_FLAGS).map(([name, spec]) => [name, oclifFlag(name, spec)]));

  // bin/run.js runs `lifeboat snapshot restore` through src/cli/snapshotRestoreRun.ts (no oclif): this is the path of --help and of oclif's own runners.
  async run(): Promise<void> {
    await main(this.argv);
  }
}
