import { Flags } from '@oclif/core';
import { confirm, input } from '@inquirer/prompts';
import { auditDbFlag } from '../../src/cli/auditFlags.js';
import { terminalSessionIo } from '../../src/cli/sessionIo.js';
import { RefusedError } from '../../src/client/errors.js';
import { connectionFromFlags, flagGiven, playbookYesFlag, reasonFlag, SessionCommand } from '../../src/cli/sessionCommand.js';
import { runPlaybookSession } from '../../src/playbook/session.js';
import { formatPlan, planRecovery } from '../../src/recovery/plan.js';

export default class Recover extends SessionCommand {
  static override description = `The recovery session for a cluster that has lost quorum for good: name the survivors you have, see the plan (which one loses the least, what is kept and lost), confirm, and the recover-from-quorum-loss playbook runs — restore into a new one-member cluster with a new cluster ID, fence the old members, re-add the others one at a time as learners and promote them — every step recorded in the audit log. On a terminal it asks for what it needs; scripted, pass --from-data-dir, --set and --yes.`;

  static override examples = [
    '<%= config.bin %> recover',
    '<%= config.bin %> recover --from-data-dir /var/lib/lifeboat/m1 --from-data-dir /var/lib/lifeboat/m2',
    '<%= config.bin %> recover --from-data-dir /var/lib/lifeboat/m1 --yes --reason "INC-4711" --set data-dir=/var/lib/lifeboat/m1-new --set client-url=http://10.0.0.1:2379',
  ];

  static override flags = {
    'from-data-dir': Flags.string({ description: "a stopped survivor's data dir (repeatable)", multiple: true, default: [] }),
    'from-snapshot': Flags.string({ description: 'a snapshot file (repeatable)', multiple: true, default: [] }),
    'discard-uncommitted': Flags.boolean({ description: "drop the entries past the survivor's commit index (by default they are applied)", default: false }),
    set: Flags.string({ description: 'a playbook variable, NAME=VALUE (repeatable)', multiple: true, multipleNonGreedy: true, default: [] }),
    yes: playbookYesFlag,
    reason: reasonFlag,
    'audit-db': auditDbFlag,
  };

  async run(): Promise<void> {
    const { flags, metadata } = await this.parse(Recover);
    const tty = process.stdin.isTTY === true && process.stdout.isTTY === true;
    // The session's own questions, the plan it showed and the go-ahead belong in the run's audit record too.
    const events: Array<{ kind: string; message: string; data?: Record<string, unknown> }> = [];
    let dataDirs = flags['from-data-dir'];
    if (dataDirs.length === 0 && flags['from-snapshot'].length === 0) {
      if (!tty) throw new RefusedError('no sources: pass --from-data-dir (or --from-snapshot); there is no terminal to ask on');
      const message = 'Data dirs of the stopped survivors (comma-separated, every one you have):';
      const answer = await input({ message, validate: (v) => v.trim() !== '' || 'name at least one' });
      dataDirs = answer.split(',').map((s) => s.trim()).filter(Boolean);
      events.push({ kind: 'prompt', message, data: { answer, session: 'recover' } });
    }
    const plan = await planRecovery({ dataDirs, inspectFiles: [], snapshots: flags['from-snapshot'], discardUncommitted: flags['discard-uncommitted'] });
    const planText = formatPlan(plan);
    this.log(planText);
    const best = plan.sources[plan.recommended];
    events.push({ kind: 'plan', message: `recover plan: recommended ${best.path} (${plan.why})`, data: { text: planText, plan: JSON.parse(JSON.stringify(plan, (_k, v) => (typeof v === 'bigint' ? v.toString(16) : v))) as Record<string, unknown> } });
    const question = `Recover from ${best.path}?`;
    const go = tty && !flags.yes ? await confirm({ message: question, default: false }) : flags.yes;
    events.push({ kind: 'prompt', message: question, data: { answer: go, session: 'recover', ...(tty && !flags.yes ? {} : { answeredBy: flags.yes ? '--yes' : 'nobody: no terminal' }) } });
    if (!go) throw new RefusedError(tty ? 'recovery not confirmed; nothing was changed' : 'recovery needs --yes without a terminal; nothing was changed');

    // What the plan knows fills the playbook's variables; the operator's --set wins.
    const me = best.report?.members.find((m) => m.id === best.report?.memberId);
    const preset = [`source=${best.path}`];
    if (me?.name) preset.push(`name=${me.name}`);
    if (me?.peerURLs[0]) preset.push(`peer-url=${me.peerURLs[0]}`);
    if (flags['discard-uncommitted']) preset.push('discard-uncommitted=true');
    const given = new Set(flags.set.map((s) => s.split('=')[0]));
    const sets = [...preset.filter((s) => !given.has(s.split('=')[0])), ...flags.set];

    await this.printSession(flags['write-out'], runPlaybookSession({
      target: 'recover-from-quorum-loss',
      sets,
      yes: flags.yes,
      dryRun: false,
      ...(flags.reason !== undefined ? { reason: flags.reason } : {}),
      ...(flags['audit-db'] !== undefined ? { auditDb: flags['audit-db'] } : {}),
      connection: connectionFromFlags(flags),
      endpoints: flags.endpoints,
      endpointsGiven: flagGiven(metadata, 'endpoints'),
      json: flags['write-out'] === 'json',
      io: terminalSessionIo({ json: flags['write-out'] === 'json' }),
      events,
    }));
  }
}
