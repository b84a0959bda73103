import { Flags } from '#oclif-core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { auditDbFlag } from '../../src/cli/auditFlags.js';
import { openAuditLogForReading } from '../../src/audit/open.js';
import { verifyMessage, verifyOutput } from '../../src/cli/output/verifyOutput.js';
import { EXIT } from '../../src/cli/exitCodes.js';
import type { VerifyResult } from '../../src/audit/types.js';

export default class AuditVerify extends BaseCommand {
  static override summary = "Check the audit log's hash chain (and its head).";

  static override description =
    "Check the audit log's hash chain: no row edited, removed, inserted or reordered, and (with --head) that it ends at the head hash printed when a run finished. Exit 0 when intact, 1 naming the first bad row.";

  static override examples = [
    '<%= config.bin %> audit verify',
    '<%= config.bin %> audit verify --head 3f2a9c0e5b7d41f6a8c2e9b0d4f6a1c3e5b7d9f0a2c4e6b8d0f2a4c6e8b0d2f4',
  ];

  static override flags = {
    head: Flags.string({
      description: 'the head hash kept outside the database; the chain must end exactly there',
      helpValue: 'HASH',
      parse: (input) => {
        const hash = input.trim().toLowerCase();
        if (!/^[0-9a-f]{64}$/.test(hash)) return Promise.reject(new Error(`invalid head hash "${input}": expected 64 hex digits (a sha256)`));
        return Promise.resolve(hash);
      },
    }),
    'audit-db': auditDbFlag,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(AuditVerify);
    const log = openAuditLogForReading(flags['audit-db'], { checkSchema: false });
    let result: VerifyResult;
    try {
      result = log.verify(flags.head);
    } finally {
      log.close();
    }
    const report = { auditDb: log.path, expectedHead: flags.head ?? null, ...result };
    if (result.ok || flags['write-out'] === 'json') this.print(flags['write-out'], report, verifyOutput);
    if (!result.ok) this.error(verifyMessage(log.path, result.firstBad), { exit: EXIT.FAILURE });
  }
}
