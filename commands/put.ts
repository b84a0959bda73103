import { EtcdCommand } from '../src/cli/baseCommand.js';
import { oclifFlags, oclifArgs } from '../src/cli/oclifFlag.js';
import { PUT } from '../src/cli/everydayCommands.js';

// bin/run.js runs it without oclif (src/cli/everydayRun.ts): this is the path of --help and of oclif's own runners.
export default class Put extends EtcdCommand {
  static override description = 'Write a key. The value is the second argument, or standard input when it is omitted.';

  static override examples = [
    '<%= config.bin %> put /config/mode blue',
    '<%= config.bin %> put /config/mode green --prev-kv',
    '<%= config.bin %> put /session/a 1 --lease 694d71ddacfda227',
    'cat cert.pem | <%= config.bin %> put /certs/web',
  ];

  static override args = oclifArgs(PUT.args);

  static override flags = oclifFlags(PUT.flags);

  async run(): Promise<void> {
    await this.runTable(PUT);
  }
}
