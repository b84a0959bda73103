import { Args } from '#oclif-core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { snapshotStatusOutput } from '../../src/cli/output/snapshotStatus.js';
import { snapshotStatus } from '../../src/recovery/snapshotFormat.js';

export default class SnapshotStatusCommand extends BaseCommand {
  static override description =
    "Verify a snapshot file's sha256 trailer, then print its hash, revision, total keys and size, and the cluster and members it came from, and whether etcd's auth is enabled in it (a restore keeps it: the restored member enforces it, log in as a user of the snapshot). Also reads a real etcd snapshot or a raw member/snap/db. The first line (simple), the table and the first four JSON fields are what `etcdctl snapshot status` prints.";

  static override examples = [
    '<%= config.bin %> snapshot status backup.db',
    '<%= config.bin %> snapshot status backup.db -w json',
    '<%= config.bin %> snapshot status /var/lib/etcd/member/snap/db',
  ];

  static override args = {
    file: Args.string({ description: 'the snapshot file', required: true }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(SnapshotStatusCommand);
    this.print(flags['write-out'], await snapshotStatus(args.file), snapshotStatusOutput);
  }
}
