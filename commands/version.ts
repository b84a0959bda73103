import { BaseCommand } from '../src/cli/baseCommand.js';
import { VERSION } from '../src/cli/everydayCommands.js';

// bin/run.js runs it without oclif (src/cli/everydayRun.ts): this is the path of --help and of oclif's own runners.
export default class Version extends BaseCommand {
  static override description = 'Print the lifeboat version, the Node.js version and the platform.';

  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version -w json'];

  async run(): Promise<void> {
    await this.runTable(VERSION);
  }
}
