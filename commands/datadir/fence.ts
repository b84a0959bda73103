import { Args, Flags } from '#oclif-core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { InputError } from '../../src/common/errors.js';
import { parseIdText } from '../../src/common/ids.js';
import { fenceDataDir, type FenceOutcome } from '../../src/recovery/fenceDataDir.js';

export default class DatadirFence extends BaseCommand {
  static override description = `Render an old member's data dir unstartable after its cluster was recovered, reversibly: nothing is deleted. Lifeboat: the superseded marker (the member exits 78 at start). etcd: member/ is moved aside to member.fenced-<ID>/ and an empty member/ beside an empty proxy/ is left, on which etcd exits 1 and creates nothing. A running member is refused (exit 3). 'datadir unfence' undoes it.`;

  static override examples = ['<%= config.bin %> datadir fence /var/lib/etcd --superseded-by e89b1e7ffdcefe1f'];

  static override args = {
    dir: Args.string({ description: 'the old data dir', required: true }),
  };

  static override flags = {
    'superseded-by': Flags.string({
      description: 'the ID of the cluster that replaced this one: hex, or decimal when it has more than 16 digits',
      required: true,
    }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(DatadirFence);
    const by = parseIdText(flags['superseded-by']);
    if (by === undefined || by === 0n)
      throw new InputError(
        `--superseded-by ${flags['superseded-by']}: expected the new cluster's ID in hex, e.g. e89b1e7ffdcefe1f, or in decimal (more than 16 digits)`,
      );
    const r = fenceDataDir(args.dir, by);
    this.print(flags['write-out'], r, (x: FenceOutcome) =>
      x.alreadyFenced
        ? `${x.dataDir} was already fenced (${x.runtime}, superseded by ${x.supersededBy} at ${x.at})`
        : `Fenced ${x.dataDir} (${x.runtime}): superseded by ${x.supersededBy}${x.movedTo ? `; its member/ is now ${x.movedTo}/` : '; marked superseded'}\nUndo with: lifeboat datadir unfence ${x.dataDir}`,
    );
  }
}
