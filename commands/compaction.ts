import { Args, Flags } from '#oclif-core';
import { EtcdCommand } from '../src/cli/baseCommand.js';
import { parseRevision } from '../src/cli/args.js';
import { compactionOutput } from '../src/cli/output/maintenance.js';

export default class Compaction extends EtcdCommand {
  static override description = 'Discard the key-value history before a revision (reads at older revisions fail afterwards).';

  static override examples = ['<%= config.bin %> compaction 1234', '<%= config.bin %> compaction 1234 --physical'];

  static override args = {
    rev: Args.string({ description: 'revision to compact up to', required: true }),
  };

  static override flags = {
    physical: Flags.boolean({ description: 'return only once the compaction is applied on every member' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Compaction);
    const revision = parseRevision(args.rev);
    const res = await this.client(flags).compact(revision, { physical: flags.physical });
    this.print(flags['write-out'], res, compactionOutput(revision));
  }
}
