import { Args, Flags } from '#oclif-core';
import { EtcdCommand } from '../src/cli/baseCommand.js';
import { deleteOutput } from '../src/cli/output/kv.js';
import { selectKeys } from '../src/client/keyRange.js';

export default class Del extends EtcdCommand {
  static override description = 'Delete a key, a range [KEY, END), a prefix or every key from KEY on; prints how many were deleted.';

  static override examples = ['<%= config.bin %> del /config/mode', '<%= config.bin %> del /config/ --prefix --prev-kv', '<%= config.bin %> del /a /m'];

  static override args = {
    key: Args.string({ description: 'the key (or the prefix with --prefix, or the start with --from-key)', required: true }),
    end: Args.string({ description: 'end of the range, exclusive' }),
  };

  static override flags = {
    prefix: Flags.boolean({ description: 'every key that starts with KEY' }),
    'from-key': Flags.boolean({ description: 'every key ≥ KEY (byte order)' }),
    'prev-kv': Flags.boolean({ description: 'print the deleted key-value pairs' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Del);
    const sel = selectKeys(args.key, args.end, { prefix: flags.prefix, fromKey: flags['from-key'] });
    const result = await this.client(flags).deleteRange(sel.key, { rangeEnd: sel.rangeEnd, prevKv: flags['prev-kv'] });
    this.print(flags['write-out'], result, deleteOutput);
  }
}
