import { Flags } from '#oclif-core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { openBackupStore, STORE_ARG, STORE_FLAGS, storeUrlOf, tagStoreError } from '../../src/cli/backupStoreFlags.js';
import { oclifDuration } from '../../src/cli/oclifFlag.js';
import { backupPruneOutput } from '../../src/cli/output/backupPrune.js';
import { InputError } from '../../src/common/errors.js';
import { readCatalog } from '../../src/backup/catalog.js';
import { applyPrune } from '../../src/backup/prune.js';
import { planPrune } from '../../src/backup/prunePlan.js';

const count = (description: string, def: number) => Flags.integer({ description, default: def, min: 0 });

export default class BackupPrune extends BaseCommand {
  static override description =
    'Delete old backups from a store by a retention policy: every revision of the last --keep-within, the last N fulls, one a day, one a week; never an object a kept restore point needs. Objects the store refuses to delete (object lock) are skipped and reported.';

  static override examples = [
    '<%= config.bin %> backup prune file:///var/backups/etcd --dry-run',
    '<%= config.bin %> backup prune s3://backups/prod --keep-within 48h --keep-last 3 --keep-daily 14 --keep-weekly 8',
  ];

  static override args = STORE_ARG;

  static override flags = {
    ...STORE_FLAGS,
    'keep-within': oclifDuration('keep-within', {
      type: 'duration',
      description: 'keep every revision seen within this long of now, e.g. 24h',
      default: 24 * 3_600_000,
      defaultHelp: '24h',
    }),
    'keep-last': count('keep the newest N fulls (at least 1)', 3),
    'keep-daily': count('keep the newest full of each of the last D days (UTC)', 7),
    'keep-weekly': count('keep the newest full of each of the last W weeks (Monday to Sunday, UTC)', 4),
    'dry-run': Flags.boolean({ description: 'list what would be deleted; delete nothing' }),
  };

  protected override async catch(err: Error & { commandId?: string; oclif?: { exit?: number } }): Promise<unknown> {
    tagStoreError(err);
    return super.catch(err);
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(BackupPrune);
    const url = storeUrlOf(flags, args.store);
    if (flags['keep-last'] < 1) throw new InputError(`--keep-last ${flags['keep-last']}: give at least 1 (prune never deletes a cluster's newest full)`);
    const store = await openBackupStore(url, flags);
    try {
      const policy = { keepWithinMs: flags['keep-within'], keepLast: flags['keep-last'], keepDaily: flags['keep-daily'], keepWeekly: flags['keep-weekly'] };
      const plan = planPrune(await readCatalog(store), policy, Date.now());
      const result = await applyPrune(store, plan, flags['dry-run']);
      this.print(flags['write-out'], result, backupPruneOutput);
    } finally {
      store.close();
    }
  }
}
