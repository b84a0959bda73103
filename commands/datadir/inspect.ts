import fs from 'node:fs';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { InputError, RefusedError } from '../../src/common/errors.js';
import { inspectDataDir, type DataDirReport } from '../../src/recovery/inspect.js';
import { DataDirLockedError } from '../../src/storage/errors.js';

export default class DatadirInspect extends BaseCommand {
  static override description = `Inspect a stopped member's data dir, read-only: cluster and member IDs, members, last term and index, commit and applied index, the entries past the commit index, the KV revision, key count and hash, the time of the last write, and any damage found. -w json is what 'recover plan --from-inspect' reads. A running member's data dir (its lock held) is refused with exit 3, as 'datadir pack' refuses it.`;

  static override examples = [
    '<%= config.bin %> datadir inspect /var/lib/lifeboat/m1',
    '<%= config.bin %> datadir inspect /var/lib/lifeboat/m1 -w json > m1.inspect.json',
  ];

  static override args = {
    dir: Args.string({ description: 'the data dir', required: true }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(DatadirInspect);
    if (!fs.existsSync(args.dir)) throw new InputError(`data dir ${args.dir} does not exist; check the path`);
    // The lock is a safety check (a live member's files are changing): exit 3, like pack.
    const report = await inspectDataDir(args.dir).catch((e: unknown) => {
      throw e instanceof DataDirLockedError ? new RefusedError(e.message) : e;
    });
    this.print(flags['write-out'], report, (r: DataDirReport) =>
      [
        `data dir        ${r.dataDir}`,
        `member          ${r.memberId.padStart(16, '0')}`,
        `cluster         ${r.clusterId.padStart(16, '0')}${r.parentClusterId ? ` (parent ${r.parentClusterId.padStart(16, '0')})` : ''}`,
        `voters          ${r.voters.map((v) => v.padStart(16, '0')).join(', ') || '-'}`,
        `learners        ${r.learners.map((v) => v.padStart(16, '0')).join(', ') || '-'}`,
        ...r.members.map((m) => `  member        ${m.id.padStart(16, '0')} ${m.name || '(unstarted)'} ${m.peerURLs.join(',')}${m.isLearner ? ' learner' : ''}`),
        `last term/index ${r.lastTerm}/${r.lastIndex} (log from ${r.firstIndex})`,
        `commit index    ${r.commitIndex}`,
        `applied index   ${r.appliedIndex}`,
        `past commit     ${r.uncommitted.count === 0 ? 'none' : `${r.uncommitted.count} entries (${r.uncommitted.from}..${r.uncommitted.to})`}`,
        `kv revision     ${r.kvRevision} (compacted at ${r.compactRevision})`,
        `keys            ${r.keyCount}`,
        `hash            ${r.hash}`,
        `last write      ${r.lastWrite ?? 'unknown'}`,
        `markers         ${r.markers.join(', ') || 'none'}`,
        `damage          ${r.damage.join('; ') || 'none found'}`,
      ].join('\n'),
    );
  }
}
