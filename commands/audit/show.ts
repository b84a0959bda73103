import { Args } from '#oclif-core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { auditDbFlag } from '../../src/cli/auditFlags.js';
import { openAuditLogForReading } from '../../src/audit/open.js';
import { timelineOutput } from '../../src/cli/output/timelineOutput.js';

export default class AuditShow extends BaseCommand {
  static override summary = 'Show one run as a timeline of steps, prompts and events.';

  static override description =
    'Show one run as a timeline: who, why, the playbook and cluster before and after, then each step (status, duration, inputs, outputs, error), every prompt and its answer, notes, warnings, resumes and the end.';

  static override examples = ['<%= config.bin %> audit show r-20261122-083015-3f2a', '<%= config.bin %> audit show r-20261122-083015-3f2a -w json'];

  static override args = {
    run_id: Args.string({ required: true, description: "run ID, as 'lifeboat audit list' shows it" }),
  };

  static override flags = { 'audit-db': auditDbFlag };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(AuditShow);
    const log = openAuditLogForReading(flags['audit-db']);
    try {
      const run = log.requireRun(args.run_id);
      this.print(flags['write-out'], { run, timeline: log.timeline(run.id) }, timelineOutput);
    } finally {
      log.close();
    }
  }
}
