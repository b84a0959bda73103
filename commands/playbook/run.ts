import { Args, Flags } from '#oclif-core';
import { auditDbFlag } from '../../src/cli/auditFlags.js';
import { terminalSessionIo } from '../../src/cli/sessionIo.js';
import {
  connectionFromFlags,
  flagGiven,
  playbookYesFlag,
  reasonFlag,
  runbookSettings,
  RUNBOOK_SKIP,
  SessionCommand,
  supervisorFlags,
  supervisorFromFlags,
} from '../../src/cli/sessionCommand.js';
import { KUBEADM_PLAYBOOK, kubeadmPlaybookConnection } from '../../src/kube/controlPlane.js';
import { runPlaybookSession } from '../../src/playbook/session.js';

export default class PlaybookRun extends SessionCommand {
  static override description = `Run a playbook: a shipped one by NAME (see 'playbook list') or a FILE. The whole file is validated first; anything wrong is refused with file:line and nothing runs. On a terminal, missing variables and the reason are asked for and progress is shown live; without one, variables come from --vars and --set, --reason is required, and anything missing fails at once (exit 2). A confirmation without a terminal needs --yes (else exit 3, naming the step); a failed safety check always stops the run (exit 3). Every run, step, prompt and answer is recorded in the audit log; the run ends by printing its ID and the audit chain's head hash.`;

  static override examples = [
    '<%= config.bin %> playbook run replace-failed-member --dry-run --set endpoints=http://10.0.0.1:2379,http://10.0.0.3:2379 --set failed=m2 --set name=m4 --set peer-url=http://10.0.0.4:2380 --set client-url=http://10.0.0.4:2379 --set data-dir=/var/lib/lifeboat/m4',
    '<%= config.bin %> playbook run recover-from-quorum-loss --vars recovery.yaml --reason "INC-4711: two members lost" --yes',
    '<%= config.bin %> playbook run ./my-playbook.yaml --endpoints http://10.0.0.1:2379',
  ];

  static override args = {
    playbook: Args.string({ description: 'a shipped playbook NAME or a playbook FILE', required: true }),
  };

  static override flags = {
    vars: Flags.string({ description: 'a YAML file of variable values (NAME: VALUE)', helpValue: 'FILE' }),
    set: Flags.string({ description: 'a variable value, NAME=VALUE (repeatable; wins over --vars)', multiple: true, multipleNonGreedy: true }),
    yes: playbookYesFlag,
    'dry-run': Flags.boolean({
      description: 'print every step with its values resolved and what it would change; change nothing, record nothing',
      default: false,
    }),
    reason: reasonFlag,
    'audit-db': auditDbFlag,
    ...supervisorFlags,
  };

  async run(): Promise<void> {
    const { args, flags, metadata } = await this.parse(PlaybookRun);
    const connection =
      args.playbook === KUBEADM_PLAYBOOK ? kubeadmPlaybookConnection(flags.set ?? [], flags.vars, connectionFromFlags(flags)) : connectionFromFlags(flags);
    await this.printSession(
      flags['write-out'],
      runPlaybookSession({
        target: args.playbook,
        ...(flags.vars !== undefined ? { varsFile: flags.vars } : {}),
        sets: flags.set ?? [],
        yes: flags.yes,
        dryRun: flags['dry-run'],
        ...(flags.reason !== undefined ? { reason: flags.reason } : {}),
        ...(flags['audit-db'] !== undefined ? { auditDb: flags['audit-db'] } : {}),
        connection,
        endpoints: flags.endpoints,
        endpointsGiven: flagGiven(metadata, 'endpoints'),
        json: flags['write-out'] === 'json',
        supervisor: supervisorFromFlags(flags),
        runbook: runbookSettings(flags, metadata, [...RUNBOOK_SKIP]),
        io: terminalSessionIo({ json: flags['write-out'] === 'json' }),
      }),
    );
  }
}
