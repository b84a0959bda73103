import { BaseCommand } from '../../src/cli/baseCommand.js';
import { listPlaybooks, type PlaybookListing } from '../../src/playbook/locate.js';
import { formatList } from '../../src/cli/output/playbookShow.js';

export default class PlaybookList extends BaseCommand {
  static override description = 'List the playbooks shipped with lifeboat, with their descriptions. Run one by name with `playbook run NAME`.';

  static override examples = ['<%= config.bin %> playbook list', '<%= config.bin %> playbook list -w json'];

  async run(): Promise<void> {
    const { flags } = await this.parse(PlaybookList);
    this.print(flags['write-out'], listPlaybooks(), { simple: (l: PlaybookListing[]) => formatList(l) });
  }
}
