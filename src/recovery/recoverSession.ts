// The recover session's logic, between its questions: the plan's source, the
// recover-from-quorum-loss variables the plan fills (the operator's --set wins),
// and the timeline events — questions, answers, the plan — recorded with the run.
import fs from 'node:fs';
import path from 'node:path';
import { RefusedError } from '../common/errors.js';
import { REPLAY_MEMBER_NAME } from './etcdRestore.js';
import type { DataDirReport, InspectedMember } from './inspect.js';
import { formatPlan, planRecovery, type RecoveryPlan } from './plan.js';

/** The playbook `lifeboat recover` runs. */
export const RECOVER_PLAYBOOK = 'recover-from-quorum-loss';

export const DATA_DIRS_QUESTION = 'Data dirs of the stopped survivors (comma-separated, every one you have):';

export interface SessionEvent {
  kind: string;
  message: string;
  data?: Record<string, unknown>;
}

/** What the session asks the operator: the cli asks on a terminal. */
export interface RecoverAsk {
  /** stdin and stdout are terminals */
  tty: boolean;
  /** a text answer (validated non-empty) */
  input(message: string): Promise<string>;
  confirm(question: string): Promise<boolean>;
  /** shows the plan before the go-ahead */
  show(text: string): void;
}

export interface RecoverInput {
  dataDirs: string[];
  snapshots: string[];
  discardUncommitted: boolean;
  yes: boolean;
  /** the operator's --set NAME=VALUE */
  sets: string[];
}

export interface RecoverDecision {
  plan: RecoveryPlan;
  /** the playbook's --set values: the plan's, then the operator's (which win) */
  sets: string[];
  /** to record when the run starts */
  events: SessionEvent[];
  /** what the prompts offer, derived from the survivor (recoverDefaults) */
  promptDefaults: Record<string, unknown>;
}

/**
 * Names the sources (asking on a terminal when none are given), plans, shows the
 * plan and asks for the go-ahead (--yes gives it). Throws RefusedError when
 * there is nothing to recover from or no go-ahead: nothing was changed.
 */
export async function decideRecovery(req: RecoverInput, ask: RecoverAsk): Promise<RecoverDecision> {
  // The session's own questions, the plan it showed and the go-ahead belong in the run's audit record too.
  const events: SessionEvent[] = [];
  let dataDirs = req.dataDirs;
  if (dataDirs.length === 0 && req.snapshots.length === 0) {
    if (!ask.tty) throw new RefusedError('no sources: pass --from-data-dir (or --from-snapshot); there is no terminal to ask on');
    const message = DATA_DIRS_QUESTION;
    const answer = await ask.input(message);
    dataDirs = answer
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    events.push({ kind: 'prompt', message, data: { answer, session: 'recover' } });
  }
  const plan = await planRecovery({ dataDirs, inspectFiles: [], snapshots: req.snapshots, discardUncommitted: req.discardUncommitted });
  const planText = formatPlan(plan);
  ask.show(planText);
  const best = plan.sources[plan.recommended];
  events.push({
    kind: 'plan',
    message: `recover plan: recommended ${best.path} (${plan.why})`,
    data: {
      text: planText,
      plan: JSON.parse(JSON.stringify(plan, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString(16) : v))) as Record<string, unknown>,
    },
  });
  const question = `Recover from ${best.path}?`;
  const go = ask.tty && !req.yes ? await ask.confirm(question) : req.yes;
  events.push({
    kind: 'prompt',
    message: question,
    data: { answer: go, session: 'recover', ...(ask.tty && !req.yes ? {} : { answeredBy: req.yes ? '--yes' : 'nobody: no terminal' }) },
  });
  if (!go) throw new RefusedError(ask.tty ? 'recovery not confirmed; nothing was changed' : 'recovery needs --yes without a terminal; nothing was changed');
  return { plan, sets: recoverSets(plan, req.discardUncommitted, req.sets), events, promptDefaults: recoverDefaults(plan) };
}

/** What the plan knows fills the playbook's variables; the operator's --set wins. */
export function recoverSets(plan: RecoveryPlan, discardUncommitted: boolean, operatorSets: string[]): string[] {
  const best = plan.sources[plan.recommended];
  const me = best.report?.members.find((m) => m.id === best.report?.memberId);
  const preset = [`source=${best.path}`];
  if (me?.name) preset.push(`name=${me.name}`);
  if (me?.peerURLs[0]) preset.push(`peer-url=${me.peerURLs[0]}`);
  if (discardUncommitted) preset.push('discard-uncommitted=true');
  // The other survivors' data dirs are on this host: fenced once the new cluster is verified.
  const others = plan.sources.filter((s, i) => i !== plan.recommended && s.report).map((s) => s.path);
  if (others.length > 0) preset.push(`old-data-dirs=${others.join(',')}`);
  const given = new Set(operatorSets.map((s) => s.split('=')[0]));
  return [...preset.filter((s) => !given.has(s.split('=')[0])), ...operatorSets];
}

/** A new data dir beside `dir`: `NAME-new`, else `NAME-new-2` … (an existing non-empty one is never offered). */
function newDirBeside(dir: string, name: string): string {
  const base = path.join(path.dirname(dir), `${name}-new`);
  for (let i = 1; i <= 20; i++) {
    const candidate = i === 1 ? base : `${base}-${i}`;
    const taken = fs.existsSync(candidate) && (!fs.statSync(candidate).isDirectory() || fs.readdirSync(candidate).length > 0);
    if (!taken) return candidate;
  }
  return `${base}-${Date.now()}`;
}

/**
 * A member record no operator chose, never offered for re-adding: an internal
 * helper (the replay member etcd recoveries run), another record of the survivor's
 * own peer URL (an old ID of the same member), or, when the survivor's Raft
 * configuration is known, a record that is neither a voter nor a learner in it.
 */
function isHelperRecord(m: InspectedMember, me: InspectedMember | undefined, report: DataDirReport | undefined): boolean {
  if (m.name === REPLAY_MEMBER_NAME) return true;
  if (me && m.peerURLs.some((u) => me.peerURLs.includes(u))) return true;
  const conf = [...(report?.voters ?? []), ...(report?.learners ?? [])];
  return conf.length > 0 && !conf.includes(m.id);
}

/**
 * What the survivor tells about the answers the plan cannot know, offered as the
 * prompts' defaults (never used without a terminal): the new data dir beside the
 * survivor's, the survivor's client URL, and every other old member — its name
 * and URLs — to re-add with a new data dir beside the survivor's.
 */
export function recoverDefaults(plan: RecoveryPlan): Record<string, unknown> {
  const best = plan.sources[plan.recommended];
  const report = best.report;
  const me = report?.members.find((m) => m.id === report.memberId);
  const out: Record<string, unknown> = {};
  out['data-dir'] = newDirBeside(best.path, me?.name || path.basename(best.path));
  if (me?.clientURLs[0]) out['client-url'] = me.clientURLs[0];
  const others = (report?.members ?? best.snapshot?.members ?? []).filter(
    (m) => m.id !== report?.memberId && m.name !== '' && m.peerURLs[0] && m.clientURLs[0] && !isHelperRecord(m, me, report),
  );
  out.members = [...others]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((m) => ({ name: m.name, peerUrl: m.peerURLs[0], clientUrl: m.clientURLs[0], dataDir: newDirBeside(best.path, m.name) }));
  return out;
}
