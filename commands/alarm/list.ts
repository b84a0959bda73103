import { EtcdCommand } from '../../src/cli/baseCommand.js';
import { alarmOutput } from '../../src/cli/output/maintenance.js';

export default class AlarmList extends EtcdCommand {
  static override description =
    'List the active alarms (NOSPACE: the backend quota is exceeded; CORRUPT: a member found data corruption). Nothing printed means none.';

  static override examples = ['<%= config.bin %> alarm list', '<%= config.bin %> alarm list -w json'];

  async run(): Promise<void> {
    const { flags } = await this.parse(AlarmList);
    const result = await this.client(flags).alarmList();
    this.print(flags['write-out'], result, alarmOutput);
  }
}
