import { BaseCommand } from '../../src/cli/baseCommand.js';
import { auditDbFlag } from '../../src/cli/auditFlags.js';
import { openAuditLogForReading } from '../../src/audit/open.js';
import { runListOutput } from '../../src/cli/output/runListOutput.js';

export default class AuditList extends BaseCommand {
  static override summary = 'List recorded runs: ID, start, playbook, who, outcome, reason.';

  static override description = 'List the recorded recovery runs, oldest first: ID, start time, playbook, who ran it, outcome and reason.';

  static override examples = ['<%= config.bin %> audit list', '<%= config.bin %> audit list -w json --audit-db /var/lib/lifeboat/audit.db'];

  static override flags = { 'audit-db': auditDbFlag };

  async run(): Promise<void> {
    const { flags } = await this.parse(AuditList);
    const log = openAuditLogForReading(flags['audit-db']);
    try {
      this.print(flags['write-out'], log.runs(), runListOutput(log.path));
    } finally {
      log.close();
    }
  }
}
