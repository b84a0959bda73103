import { Args, Flags } from '#oclif-core';
import { auditDbFlag } from '../../src/cli/auditFlags.js';
import { terminalSessionIo } from '../../src/cli/sessionIo.js';
import {
  connectionFromFlags,
  flagGiven,
  playbookYesFlag,
  runbookSettings,
  RUNBOOK_SKIP,
  SessionCommand,
  supervisorFlags,
  supervisorFromFlags,
} from '../../src/cli/sessionCommand.js';
import { resumePlaybookSession } from '../../src/playbook/session.js';

export default class PlaybookResume extends SessionCommand {
  static override description = `Continue an interrupted, failed or refused run at its first step not completed, with the variables it recorded (--set changes one that no completed step used). Completed steps are not run again (except the probe that old members are down, fence-old-members, until the run has started a member); the interrupted one is (steps are idempotent). Refused if the playbook file changed since the run started (both sha256 hashes are named) or another process is still running it. The connection flags default to the ones the run recorded.`;

  static override examples = [
    '<%= config.bin %> playbook resume r-20260312-031502-9c1e',
    '<%= config.bin %> playbook resume r-20260312-031502-9c1e --yes --audit-db /srv/lifeboat/audit.db',
    '<%= config.bin %> playbook resume r-20260312-031502-9c1e --set source=/var/lib/lifeboat/m1',
  ];

  static override args = {
    'run-id': Args.string({ description: "the run's ID (see 'lifeboat audit list')", required: true }),
  };

  static override flags = {
    set: Flags.string({
      description: 'change a variable, NAME=VALUE (repeatable): only one that no completed step used; the failed step runs again with it',
      multiple: true,
      multipleNonGreedy: true,
      default: [],
    }),
    yes: playbookYesFlag,
    reason: Flags.string({ description: 'why you are resuming, recorded in the audit log', helpValue: 'TEXT' }),
    'audit-db': auditDbFlag,
    ...supervisorFlags,
  };

  async run(): Promise<void> {
    const { args, flags, metadata } = await this.parse(PlaybookResume);
    const connectionGiven = ['dial-timeout', 'command-timeout', 'cacert', 'cert', 'key', 'insecure-skip-tls-verify'].some((f) => flagGiven(metadata, f));
    await this.printSession(
      flags['write-out'],
      resumePlaybookSession({
        runId: args['run-id'],
        yes: flags.yes,
        sets: flags.set,
        ...(flags.reason !== undefined ? { reason: flags.reason } : {}),
        ...(flags['audit-db'] !== undefined ? { auditDb: flags['audit-db'] } : {}),
        connection: connectionFromFlags(flags),
        endpoints: flags.endpoints,
        explicit: { endpoints: flagGiven(metadata, 'endpoints'), connection: connectionGiven },
        json: flags['write-out'] === 'json',
        supervisor: supervisorFromFlags(flags),
        runbook: runbookSettings(flags, metadata, [...RUNBOOK_SKIP]),
        io: terminalSessionIo({ json: flags['write-out'] === 'json' }),
      }),
    );
  }
}
