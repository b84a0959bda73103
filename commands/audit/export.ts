import { Flags } from '#oclif-core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { auditDbFlag } from '../../src/cli/auditFlags.js';
import { openAuditLogForReading } from '../../src/audit/open.js';
import { EXPORT_FORMATS, exportCsv, exportJson } from '../../src/audit/exportFormats.js';

export default class AuditExport extends BaseCommand {
  static override summary = 'Export runs with their steps and events as JSON or CSV.';

  static override description =
    'Write the audit log to stdout: JSON (every run with its steps and events, and the chain head) or CSV (one row per step and per event).';

  static override examples = [
    '<%= config.bin %> audit export > audit.json',
    '<%= config.bin %> audit export --format csv --run r-20261122-083015-3f2a > run.csv',
  ];

  static override flags = {
    format: Flags.option({ description: 'output format', options: EXPORT_FORMATS, default: 'json' as const })(),
    run: Flags.string({ description: 'only this run', helpValue: 'RUN_ID' }),
    'audit-db': auditDbFlag,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(AuditExport);
    const log = openAuditLogForReading(flags['audit-db']);
    try {
      const data = log.exportRuns(flags.run);
      process.stdout.write(flags.format === 'csv' ? exportCsv(data) : exportJson(data));
    } finally {
      log.close();
    }
  }
}
