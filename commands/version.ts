import { BaseCommand } from '../src/cli/baseCommand.js';

export default class Version extends BaseCommand {
  static override description = 'Print the lifeboat version, the Node.js version and the platform.';

  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version -w json'];

  async run(): Promise<void> {
    const { flags } = await this.parse(Version);
    // this.config reads name and version from package.json.
    const info = {
      name: this.config.bin,
      version: this.config.version,
      node: process.version,
      platform: process.platform,
      arch: process.arch,
    };
    this.print(flags['write-out'], info, (i) => `${i.name}/${i.version} node-${i.node} ${i.platform}-${i.arch}`);
  }
}
