import { EtcdCommand } from '../../src/cli/baseCommand.js';
import { alarmOutput } from '../../src/cli/output/maintenance.js';

export default class AlarmDisarm extends EtcdCommand {
  static override description = 'Deactivate every active alarm and print those disarmed. For NOSPACE, compact and defragment first, or it fires again.';

  static override examples = ['<%= config.bin %> alarm disarm'];

  async run(): Promise<void> {
    const { flags } = await this.parse(AlarmDisarm);
    const result = await this.client(flags).alarmDisarmAll();
    this.print(flags['write-out'], result, alarmOutput);
  }
}
