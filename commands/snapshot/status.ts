import { BaseCommand } from '../../src/cli/baseCommand.js';
import { oclifArgs } from '../../src/cli/oclifFlag.js';
import { SNAPSHOT_STATUS } from '../../src/cli/everydayCommands.js';

// bin/run.js runs it without oclif (src/cli/everydayRun.ts): this is the path of --help and of oclif's own runners.
export default class SnapshotStatusCommand extends BaseCommand {
  static override description =
    "Verify a snapshot file's sha256 trailer, then print its hash, revision, total keys and size, and the cluster and members it came from, and whether etcd's auth is enabled in it (a restore keeps it: the restored member enforces it, log in as a user of the snapshot). Also reads a real etcd snapshot or a raw member/snap/db. The first line (simple), the table and the first four JSON fields are what `etcdctl snapshot status` prints.";

  static override examples = [
    '<%= config.bin %> snapshot status backup.db',
    '<%= config.bin %> snapshot status backup.db -w json',
    '<%= config.bin %> snapshot status /var/lib/etcd/member/snap/db',
  ];

  static override args = oclifArgs(SNAPSHOT_STATUS.args);

  async run(): Promise<void> {
    await this.runTable(SNAPSHOT_STATUS);
  }
}
