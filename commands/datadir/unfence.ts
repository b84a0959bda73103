import { Args } from '#oclif-core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { unfenceDataDir, type FenceRecord } from '../../src/recovery/fenceDataDir.js';

export default class DatadirUnfence extends BaseCommand {
  static override description = `Undo 'datadir fence': the member can start on the data dir again. Refused if anything ran on the fenced layout since.`;

  static override examples = ['<%= config.bin %> datadir unfence /var/lib/etcd'];

  static override args = {
    dir: Args.string({ description: 'the fenced data dir', required: true }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(DatadirUnfence);
    const r = unfenceDataDir(args.dir);
    this.print(flags['write-out'], r, (x: FenceRecord) => `Unfenced ${args.dir} (${x.runtime}; it had been superseded by ${x.supersededBy} at ${x.at})`);
  }
}
