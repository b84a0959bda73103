import { Flags } from '#oclif-core';
import { auditDbFlag } from '../../src/cli/auditFlags.js';
import { recoverSession } from '../../src/cli/recoverSession.js';
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

export default class Recover extends SessionCommand {
  static override description = `The recovery session for a cluster that has lost quorum for good: name the survivors you have, see the plan (which one loses the least, what is kept and lost), confirm, and the recover-from-quorum-loss playbook runs — restore into a new one-member cluster with a new cluster ID, fence the old members, re-add the others one at a time as learners and promote them — every step recorded in the audit log. On a terminal it asks for what it needs; scripted, pass --from-data-dir, --set and --yes. Survivors of different clusters are never offered as a default: it asks which cluster to recover (scripted: refused unless --cluster-id names it).`;

  static override examples = [
    '<%= config.bin %> recover',
    '<%= config.bin %> recover --from-data-dir /var/lib/lifeboat/m1 --from-data-dir /var/lib/lifeboat/m2',
    '<%= config.bin %> recover --from-data-dir /var/lib/lifeboat/m1 --yes --reason "INC-4711" --set data-dir=/var/lib/lifeboat/m1-new --set client-url=http://10.0.0.1:2379',
  ];

  static override flags = {
    'from-data-dir': Flags.string({ description: "a stopped survivor's data dir (repeatable)", multiple: true }),
    'from-snapshot': Flags.string({ description: 'a snapshot file (repeatable)', multiple: true }),
    'cluster-id': Flags.string({
      description: 'the cluster to recover when the survivors are of different clusters: its ID in hex, as the plan prints it (asked on a terminal)',
    }),
    'discard-uncommitted': Flags.boolean({ description: "drop the entries past the survivor's commit index (by default they are applied)", default: false }),
    set: Flags.string({ description: 'a playbook variable, NAME=VALUE (repeatable)', multiple: true, multipleNonGreedy: true }),
    yes: playbookYesFlag,
    reason: reasonFlag,
    'audit-db': auditDbFlag,
    ...supervisorFlags,
  };

  async run(): Promise<void> {
    const { flags, metadata } = await this.parse(Recover);
    await this.printSession(
      flags['write-out'],
      recoverSession({
        dataDirs: flags['from-data-dir'] ?? [],
        snapshots: flags['from-snapshot'] ?? [],
        discardUncommitted: flags['discard-uncommitted'],
        ...(flags['cluster-id'] !== undefined ? { clusterId: flags['cluster-id'] } : {}),
        sets: flags.set ?? [],
        yes: flags.yes,
        ...(flags.reason !== undefined ? { reason: flags.reason } : {}),
        ...(flags['audit-db'] !== undefined ? { auditDb: flags['audit-db'] } : {}),
        connection: connectionFromFlags(flags),
        endpoints: flags.endpoints,
        endpointsGiven: flagGiven(metadata, 'endpoints'),
        json: flags['write-out'] === 'json',
        supervisor: supervisorFromFlags(flags),
        runbook: runbookSettings(flags, metadata, [...RUNBOOK_SKIP, 'from-data-dir', 'from-snapshot', 'discard-uncommitted']),
      }),
    );
  }
}
