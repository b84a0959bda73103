import { Args } from '@oclif/core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { snapshotStatus, type SnapshotStatus } from '../../src/recovery/snapshotFormat.js';

export default class SnapshotStatusCommand extends BaseCommand {
  static override description =
    'Verify a snapshot file\'s sha256 trailer, then print its hash, revision, total keys and size, and the cluster and members it came from.';

  static override examples = ['<%= config.bin %> snapshot status backup.db', '<%= config.bin %> snapshot status backup.db -w json'];

  static override args = {
    file: Args.string({ description: 'the snapshot file', required: true }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(SnapshotStatusCommand);
    const status = await snapshotStatus(args.file);
    this.print(flags['write-out'], status, {
      simple: (s: SnapshotStatus) =>
        [
          `${s.hash}, ${s.revision}, ${s.totalKeys}, ${s.totalSize}`,
          `sha256 ${s.sha256} (verified)`,
          `cluster ${s.clusterId}${s.parentClusterId ? ` (parent ${s.parentClusterId})` : ''}, applied index ${s.appliedIndex}`,
          ...s.members.map((m) => `member ${m.id.padStart(16, '0')} ${m.name || '(unstarted)'} ${m.peerURLs.join(',')}${m.isLearner ? ' learner' : ''}`),
        ].join('\n'),
      table: (s: SnapshotStatus) =>
        [
          '+----------+----------+------------+------------+',
          '|   HASH   | REVISION | TOTAL KEYS | TOTAL SIZE |',
          '+----------+----------+------------+------------+',
          `| ${s.hash.padStart(8)} | ${String(s.revision).padStart(8)} | ${String(s.totalKeys).padStart(10)} | ${String(s.totalSize).padStart(10)} |`,
          '+----------+----------+------------+------------+',
        ].join('\n'),
    });
  }
}
