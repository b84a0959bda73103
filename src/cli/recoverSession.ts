// `lifeboat recover` on a terminal: asks what recovery/recoverSession.ts needs
// (sources, the go-ahead), prints the plan on stdout, then runs the
// recover-from-quorum-loss playbook session with what the plan decided.
import { confirm, input } from '@inquirer/prompts';
import { settleCredentials } from '../playbook/credentials.js';
import { runPlaybookSession, type PlaybookRunRequest, type SessionResult } from '../playbook/session.js';
import { decideRecovery, RECOVER_PLAYBOOK, type RecoverAsk, type RecoverInput } from '../recovery/recoverSession.js';
import { terminalSessionIo } from './sessionIo.js';
import { backupSourceSets, resolveBackupPoints, type BackupSourceFlagValues } from './backupSourceFlags.js';

export type RecoverRequest = Omit<RecoverInput, 'backups'> &
  BackupSourceFlagValues &
  Pick<PlaybookRunRequest, 'reason' | 'auditDb' | 'connection' | 'endpoints' | 'endpointsGiven' | 'json' | 'supervisor' | 'runbook'>;

/** The terminal's questions, each answer's time kept (by question) so the audit log records when it was given. */
function terminalAsk(answeredAt: Map<string, string>): RecoverAsk {
  const stamp = <T>(message: string, answer: T): T => {
    answeredAt.set(message, new Date().toISOString());
    return answer;
  };
  return {
    tty: process.stdin.isTTY === true && process.stdout.isTTY === true,
    input: async (message) => stamp(message, await input({ message, validate: (v) => v.trim() !== '' || 'name at least one' })),
    confirm: async (message) => stamp(message, await confirm({ message, default: false })),
    show: (text) => {
      answeredAt.set(SHOWN, new Date().toISOString());
      process.stdout.write(`${text}\n`);
    },
  };
}

const SHOWN = '(the plan was shown)';

export async function recoverSession(req: RecoverRequest, ask: (answeredAt: Map<string, string>) => RecoverAsk = terminalAsk): Promise<SessionResult> {
  const answeredAt = new Map<string, string>();
  const decidedAt = new Date().toISOString();
  // The password is the first question (nothing is drawn yet), and is checked against the survivor's
  // own auth store as soon as the plan has chosen it: a wrong one is said before any other question.
  let connection = await settleCredentials(req.connection, {});
  // Backup points are read from their stores (the catalog only) before the plan compares them; their settings go to the playbook.
  const backups = await resolveBackupPoints(req, req.clusterId);
  const decision = { ...req, backups, sets: [...backupSourceSets(req), ...req.sets] };
  const { sets, events, promptDefaults } = await decideRecovery(decision, ask(answeredAt), async (source) => {
    connection = await settleCredentials(connection, { source });
  });
  // What the plan filled in is the plan's, not the operator's --set (which wins, and stays labelled --set).
  const planned = sets.filter((s) => !decision.sets.includes(s));
  return runPlaybookSession({
    target: RECOVER_PLAYBOOK,
    sets: decision.sets,
    planned,
    yes: req.yes,
    dryRun: false,
    ...(req.reason !== undefined ? { reason: req.reason } : {}),
    ...(req.auditDb !== undefined ? { auditDb: req.auditDb } : {}),
    connection,
    ...(req.endpoints !== undefined ? { endpoints: req.endpoints } : {}),
    ...(req.endpointsGiven !== undefined ? { endpointsGiven: req.endpointsGiven } : {}),
    ...(req.json !== undefined ? { json: req.json } : {}),
    io: terminalSessionIo({ json: req.json ?? false }),
    // Each at the time it happened: the session's questions come before the playbook's.
    events: events.map((e) => ({ ...e, at: answeredAt.get(e.kind === 'plan' ? SHOWN : e.message) ?? decidedAt })),
    promptDefaults,
    ...(req.supervisor ? { supervisor: req.supervisor } : {}),
    ...(req.runbook ? { runbook: req.runbook } : {}),
  });
}
