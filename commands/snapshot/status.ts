import { Args } from '@oclif/core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { snapshotStatus, type EtcdFileStatus, type SnapshotStatus } from '../../src/recovery/snapshotFormat.js';

export default class SnapshotStatusCommand extends BaseCommand {
  static override description =
    "Verify a snapshot file's sha256 trailer, then print its hash, revision, total keys and size, and the cluster and members it came from. Also reads a real etcd snapshot or a raw member/snap/db, printing what `etcdctl snapshot status` prints (hash, revision, total keys, total size) and more.";

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
    const status = await snapshotStatus(args.file);
    this.print(flags['write-out'], status, {
      simple: (s: SnapshotStatus) =>
        s.etcd
          ? etcdLines(s, s.etcd).join('\n')
          : [
              `${s.hash}, ${s.revision}, ${s.totalKeys}, ${s.totalSize}`,
              `database sha256 ${s.sha256} (the trailer's digest of the database, verified)`,
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

function etcdLines(s: SnapshotStatus, e: EtcdFileStatus): string[] {
  const trailer =
    e.trailer === 'verified'
      ? `database sha256 ${s.sha256} (the trailer's digest of the database, verified)`
      : e.trailer === 'absent'
        ? 'no sha256 trailer (a raw member/snap/db; restore needs --skip-hash-check)'
        : `sha256 trailer WRONG: stored ${e.storedSha256}, computed ${s.sha256} (restore will refuse it)`;
  return [
    `${s.hash}, ${s.revision}, ${s.totalKeys}, ${s.totalSize}`,
    `etcd backend${e.clusterVersion ? ` (cluster version ${e.clusterVersion})` : ''}: ${e.liveKeys} live keys, ${e.storedRevisions} stored revisions, compacted at ${e.compactRevision}, ${e.leases} leases, consistent index ${s.appliedIndex}`,
    trailer,
    `cluster ${s.clusterId} (${e.clusterIdDerived})`,
    ...s.members.map((m) => `member ${m.id.padStart(16, '0')} ${m.name || '(unstarted)'} ${m.peerURLs.join(',')}${m.isLearner ? ' learner' : ''}`),
    ...(e.removedMembers.length > 0 ? [`removed members ${e.removedMembers.join(', ')}`] : []),
    ...e.alarms.map((a) => `alarm ${a.alarm} on member ${a.memberId}`),
    ...(e.authEnabled ? ['authentication enabled (not carried over by restore)'] : []),
    ...(e.otherMetaInvalid ? [`warning: read meta page ${e.metaPage}; ${e.otherMetaInvalid}`] : []),
  ];
}
