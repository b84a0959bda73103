import { Args, Flags } from '#oclif-core';
import { EtcdCommand } from '../src/cli/baseCommand.js';
import { parseRevision } from '../src/cli/args.js';
import { getOutput } from '../src/cli/output/kv.js';
import { selectKeys } from '../src/client/keyRange.js';
import type { SortOrder, SortTarget } from '../src/client/types.js';

const SORT_TARGETS: Record<string, SortTarget> = { KEY: 'KEY', CREATE: 'CREATE', MODIFY: 'MOD', VALUE: 'VALUE', VERSION: 'VERSION' };

export default class Get extends EtcdCommand {
  static override description = 'Read a key, a range [KEY, END), a prefix or every key from KEY on. Simple output is the key, then the value, per key.';

  static override examples = [
    '<%= config.bin %> get /config/mode',
    '<%= config.bin %> get /config/ --prefix --keys-only',
    '<%= config.bin %> get /a /m --limit 10 -w table',
    '<%= config.bin %> get "" --prefix --count-only',
    '<%= config.bin %> get /config/mode --rev 42 --consistency s',
  ];

  static override args = {
    key: Args.string({ description: 'the key (or the prefix with --prefix, or the start with --from-key)', required: true }),
    end: Args.string({ description: 'end of the range, exclusive' }),
  };

  static override flags = {
    prefix: Flags.boolean({ description: 'every key that starts with KEY' }),
    'from-key': Flags.boolean({ description: 'every key ≥ KEY (byte order)' }),
    rev: Flags.string({ description: 'read at this revision (default: the latest)' }),
    limit: Flags.string({ description: 'return at most this many keys' }),
    'keys-only': Flags.boolean({ description: 'keys only, no values' }),
    'count-only': Flags.boolean({ description: 'only the number of keys' }),
    consistency: Flags.option({
      description: 'l: linearizable (through the leader); s: serializable (this member, may be stale)',
      options: ['l', 's'] as const,
      default: 'l',
    })(),
    'sort-by': Flags.option({ description: 'sort by this field', options: ['KEY', 'CREATE', 'MODIFY', 'VALUE', 'VERSION'] as const })(),
    order: Flags.option({ description: 'sort order', options: ['ASCEND', 'DESCEND'] as const })(),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Get);
    const sel = selectKeys(args.key, args.end, { prefix: flags.prefix, fromKey: flags['from-key'] });
    const sortOrder: SortOrder = flags.order ?? (flags['sort-by'] ? 'ASCEND' : 'NONE');
    const result = await this.client(flags).range(sel.key, {
      rangeEnd: sel.rangeEnd,
      revision: flags.rev === undefined ? undefined : parseRevision(flags.rev, '--rev', 0),
      limit: flags.limit === undefined ? undefined : parseRevision(flags.limit, '--limit', 0),
      keysOnly: flags['keys-only'],
      countOnly: flags['count-only'],
      serializable: flags.consistency === 's',
      sortOrder,
      sortTarget: SORT_TARGETS[flags['sort-by'] ?? 'KEY'],
    });
    this.print(flags['write-out'], result, getOutput({ countOnly: flags['count-only'], keysOnly: flags['keys-only'] }));
  }
}
