import { Flags } from '#oclif-core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { formatPlan, planRecovery, type RecoveryPlan } from '../../src/recovery/plan.js';

export default class RecoverPlan extends BaseCommand {
  static override description = `Compare every survivor you have (Lifeboat or etcd data dirs), strictly read-only, and recommend the one that loses the least (highest last term, then index). For each source: cluster and member IDs, members, last term and index, commit and applied index, KV revision, key count and hash, and the entries past the commit index. Says what is kept and what would be lost, and prints the command that applies the plan.`;

  static override examples = [
    '<%= config.bin %> recover plan --from-data-dir /var/lib/lifeboat/m1 --from-data-dir /var/lib/lifeboat/m2',
    '<%= config.bin %> recover plan --from-data-dir /var/lib/lifeboat/m1 --from-inspect m3.inspect.json --from-snapshot /backups/latest.db -w json',
  ];

  static override flags = {
    'from-data-dir': Flags.string({ description: "a stopped survivor's data dir (repeatable)", multiple: true }),
    'from-inspect': Flags.string({
      description: "the 'datadir inspect -w json' output of a survivor on another host (repeatable)",
      multiple: true,
    }),
    'wal-dir': Flags.string({
      description:
        'an etcd data dir\'s separate WAL directory (etcd\'s --wal-dir): one for the only --from-data-dir, or one per --from-data-dir in order ("" for none)',
      multiple: true,
    }),
    'from-snapshot': Flags.string({ description: 'a snapshot file (repeatable)', multiple: true }),
    'discard-uncommitted': Flags.boolean({
      description: "plan to drop the entries past the survivor's commit index (by default they are applied: the old leader may have acknowledged them)",
      default: false,
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(RecoverPlan);
    const plan = await planRecovery({
      dataDirs: flags['from-data-dir'] ?? [],
      walDirs: flags['wal-dir'] ?? [],
      inspectFiles: flags['from-inspect'] ?? [],
      snapshots: flags['from-snapshot'] ?? [],
      discardUncommitted: flags['discard-uncommitted'],
    });
    this.print(flags['write-out'], plan, (p: RecoveryPlan) => formatPlan(p));
  }
}
