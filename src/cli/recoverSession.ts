// `lifeboat recover` on a terminal: asks what recovery/recoverSession.ts needs
// (sources, the go-ahead), prints the plan on stdout, then runs the
// recover-from-quorum-loss playbook session with what the plan decided.
import { confirm, input } from '@inquirer/prompts';
import { runPlaybookSession, type PlaybookRunRequest, type SessionResult } from '../playbook/session.js';
import { decideRecovery, RECOVER_PLAYBOOK, type RecoverAsk, type RecoverInput } from '../recovery/recoverSession.js';
import { terminalSessionIo } from './sessionIo.js';

export type RecoverRequest = RecoverInput &
  Pick<PlaybookRunRequest, 'reason' | 'auditDb' | 'connection' | 'endpoints' | 'endpointsGiven' | 'json' | 'supervisor'>;

const terminalAsk: RecoverAsk = {
  tty: process.stdin.isTTY === true && process.stdout.isTTY === true,
  input: (message) => input({ message, validate: (v) => v.trim() !== '' || 'name at least one' }),
  confirm: (message) => confirm({ message, default: false }),
  show: (text) => process.stdout.write(`${text}\n`),
};

export async function recoverSession(req: RecoverRequest): Promise<SessionResult> {
  const { sets, events, promptDefaults } = await decideRecovery(req, terminalAsk);
  return runPlaybookSession({
    target: RECOVER_PLAYBOOK,
    sets,
    yes: req.yes,
    dryRun: false,
    ...(req.reason !== undefined ? { reason: req.reason } : {}),
    ...(req.auditDb !== undefined ? { auditDb: req.auditDb } : {}),
    connection: req.connection,
    ...(req.endpoints !== undefined ? { endpoints: req.endpoints } : {}),
    ...(req.endpointsGiven !== undefined ? { endpointsGiven: req.endpointsGiven } : {}),
    ...(req.json !== undefined ? { json: req.json } : {}),
    io: terminalSessionIo({ json: req.json ?? false }),
    events,
    promptDefaults,
    ...(req.supervisor ? { supervisor: req.supervisor } : {}),
  });
}
