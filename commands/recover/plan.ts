import { Flags } from '#oclif-core';
import { EtcdCommand } from '../../src/cli/baseCommand.js';
import { runbookSettings } from '../../src/cli/sessionCommand.js';
import { shellQuote } from '../../src/common/memberCommand.js';
import { formatPlan, planRecovery, type RecoveryPlan } from '../../src/recovery/plan.js';

export default class RecoverPlan extends EtcdCommand {
  static override description = `Compare every survivor you have (Lifeboat or etcd data dirs), strictly read-only, and recommend the one that loses the least (highest last term, then index). For each source: cluster and member IDs, members, last term and index, commit and applied index, KV revision, key count and hash, and the entries past the commit index. Says what is kept and what would be lost, and prints the command that applies the plan, with the connection flags given here (--user, --password-file, --cacert, --cert, --key, …; --user root when the source has etcd's auth enabled).`;

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
    const { flags, metadata } = await this.parse(RecoverPlan);
    const plan = await planRecovery({
      dataDirs: flags['from-data-dir'] ?? [],
      walDirs: flags['wal-dir'] ?? [],
      inspectFiles: flags['from-inspect'] ?? [],
      snapshots: flags['from-snapshot'] ?? [],
      discardUncommitted: flags['discard-uncommitted'],
    });
    // The command applying the plan connects as the run will: the connection flags given here, and root's where the source has auth.
    const runbook = runbookSettings(flags, metadata, ['from-data-dir', 'from-inspect', 'wal-dir', 'from-snapshot', 'discard-uncommitted', 'write-out']);
    const best = plan.sources[plan.recommended];
    if ((best?.report?.authEnabled || best?.snapshot?.etcd?.authEnabled) && flags.user === undefined) {
      runbook.flags.push('--user', 'root');
      runbook.env.push('LIFEBOAT_PASSWORD');
    }
    if (runbook.flags.length > 0) plan.command = `${plan.command} ${runbook.flags.map((w) => shellQuote(w)).join(' ')}`;
    if (runbook.env.length > 0) plan.command = `${plan.command}   # secrets from the environment: ${runbook.env.join(', ')}`;
    this.print(flags['write-out'], plan, (p: RecoveryPlan) => formatPlan(p));
  }
}
