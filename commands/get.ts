import { EtcdCommand } from '../src/cli/baseCommand.js';
import { oclifFlags, oclifArgs } from '../src/cli/oclifFlag.js';
import { GET } from '../src/cli/everydayCommands.js';

// bin/run.js runs it without oclif (src/cli/everydayRun.ts): this is the path of --help and of oclif's own runners.
export default class Get extends EtcdCommand {
  static override description = 'Read a key, a range [KEY, END), a prefix or every key from KEY on. Simple output is the key, then the value, per key.';

  static override examples = [
    '<%= config.bin %> get /config/mode',
    '<%= config.bin %> get /config/ --prefix --keys-only',
    '<%= config.bin %> get /a /m --limit 10 -w table',
    '<%= config.bin %> get "" --prefix --count-only',
    '<%= config.bin %> get /config/mode --rev 42 --consistency s',
  ];

  static override args = oclifArgs(GET.args);

  static override flags = oclifFlags(GET.flags);

  async run(): Promise<void> {
    await this.runTable(GET);
  }
}
