import { Args } from '#oclif-core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { exitIfInvalid } from '../../src/cli/sessionCommand.js';
import { loadStepLibrary } from '../../src/playbook/library.js';
import type { Playbook } from '../../src/playbook/schema.js';
import { loadValidPlaybook } from '../../src/playbook/session.js';
import { formatShow, showJson } from '../../src/cli/output/playbookShow.js';

export default class PlaybookShow extends BaseCommand {
  static override description =
    'Validate a playbook (a shipped NAME or a FILE) and print its variables and steps. A bad playbook is refused with one line per problem (file:line:col), exit 2.';

  static override examples = ['<%= config.bin %> playbook show recover-from-quorum-loss', '<%= config.bin %> playbook show ./my-playbook.yaml -w json'];

  static override args = {
    playbook: Args.string({ description: 'a shipped playbook NAME or a playbook FILE', required: true }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(PlaybookShow);
    const pb = loadValidPlaybook(args.playbook, loadStepLibrary());
    this.print(flags['write-out'], pb, { simple: (p: Playbook) => formatShow(p), json: (p: Playbook) => showJson(p) });
  }

  protected override async catch(err: Error & { commandId?: string; oclif?: { exit?: number } }): Promise<unknown> {
    exitIfInvalid(this, err);
    return super.catch(err);
  }
}
