// The recover session's logic, between its questions: the plan's source, the
// recover-from-quorum-loss variables the plan fills (the operator's --set wins),
// and the timeline events — questions, answers, the plan — recorded with the run.
import fs from 'node:fs';
import path from 'node:path';
import { InputError, RefusedError } from '../common/errors.js';
import { formatId, parseHexId } from '../common/ids.js';
import { NAME_PLACEHOLDER } from '../ops/memberTls.js';
import { REPLAY_MEMBER_NAME } from './etcdRestore.js';
import type { DataDirReport, InspectedMember } from './inspect.js';
import { formatOverview, formatPlan, MixedClustersError, planRecovery, type BackupPoint, type PlanInput, type RecoveryPlan } from './plan.js';
import { detectSurvivorTls, HOST_ROOT_ENV, TLS_VARIABLES, tlsSearchText, type DetectedTls } from './survivorTls.js';

/** The playbook `lifeboat recover` runs. */
export const RECOVER_PLAYBOOK = 'recover-from-quorum-loss';

export const DATA_DIRS_QUESTION = 'Data dirs of the stopped survivors (comma-separated, every one you have):';

export const CLUSTER_QUESTION = 'These sources are of different clusters (listed above): which cluster do you recover? Type its ID';

/** Wrong answers to the cluster question before the session gives up. */
const CLUSTER_ATTEMPTS = 3;

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
  /** backup points (--from-backup), resolved against their stores */
  backups?: BackupPoint[];
  /** recover from the backup point even when a survivor holds more */
  preferBackup?: boolean;
  discardUncommitted: boolean;
  /** the cluster to recover when the sources span clusters (asked on a terminal when not given) */
  clusterId?: string;
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
/**
 * `checkCredentials` is called with the chosen source (a data dir or snapshot) as soon as the plan has
 * chosen it, before the plan is shown: the operator's password is checked against its auth store then.
 */
export async function decideRecovery(req: RecoverInput, ask: RecoverAsk, checkCredentials?: (source: string) => Promise<void>): Promise<RecoverDecision> {
  // The session's own questions, the plan it showed and the go-ahead belong in the run's audit record too.
  const events: SessionEvent[] = [];
  let dataDirs = req.dataDirs;
  if (dataDirs.length === 0 && req.snapshots.length === 0 && (req.backups ?? []).length === 0) {
    if (!ask.tty) throw new RefusedError('no sources: pass --from-data-dir (or --from-snapshot); there is no terminal to ask on');
    const message = DATA_DIRS_QUESTION;
    const answer = await ask.input(message);
    dataDirs = answer
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    events.push({ kind: 'prompt', message, data: { answer, session: 'recover' } });
  }
  const planInput: PlanInput = {
    dataDirs,
    inspectFiles: [],
    snapshots: req.snapshots,
    ...(req.backups ? { backups: req.backups } : {}),
    ...(req.preferBackup ? { preferBackup: true } : {}),
    discardUncommitted: req.discardUncommitted,
    ...(req.clusterId !== undefined ? { clusterId: req.clusterId } : {}),
  };
  let plan: RecoveryPlan;
  try {
    plan = await planRecovery(planInput);
  } catch (e) {
    // Sources of different clusters: no default, ever. The operator names one (scripted: refused, --cluster-id).
    if (!(e instanceof MixedClustersError) || !ask.tty) throw e;
    plan = await planRecovery({ ...planInput, clusterId: await askCluster(e, ask, events) });
  }
  const best = plan.sources[plan.recommended];
  // A backup given and a survivor holding more: never the survivor silently instead, never the older backup by default.
  if (plan.backupSetAside && !ask.tty) throw new RefusedError(`${plan.backupSetAside}; nothing was changed`);
  if (checkCredentials && best.kind !== 'inspect' && best.kind !== 'backup') await checkCredentials(best.path);
  const tls = survivorTls(plan, req.sets);
  const planText = [formatPlan(plan), ...(tls.line ? [tls.line] : [])].join('\n');
  ask.show(planText);
  events.push({
    kind: 'plan',
    message: `recover plan: recommended ${best.path} (${plan.why})`,
    data: {
      text: planText,
      plan: JSON.parse(JSON.stringify(plan, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString(16) : v))) as Record<string, unknown>,
    },
  });
  if (tls.detected) events.push({ kind: 'note', message: tls.line ?? '', data: { tls: tls.detected } });
  let tlsSets = tls.detected ? Object.entries(tls.detected.sets).map(([k, v]) => `${k}=${v}`) : [];
  if (tls.unknown) {
    // https:// URLs and no certificates known: members started without them would not serve.
    if (!ask.tty)
      throw new InputError(
        `the survivor's URLs are https:// (${tls.unknown}) and its TLS settings were not found (looked in ${tlsSearchText(best.path, process.env[HOST_ROOT_ENV] || '/')}): set ${TLS_VARIABLES.join(', ')} with --set, each member's own (${NAME_PLACEHOLDER} in a path is the member's name, e.g. --set cert-file=/etc/etcd/pki/${NAME_PLACEHOLDER}/server.crt); nothing was changed`,
      );
    const answer = (await ask.input(TLS_DIR_QUESTION)).trim();
    events.push({ kind: 'prompt', message: TLS_DIR_QUESTION, data: { answer, session: 'recover' } });
    tlsSets = tlsDirSets(answer, tls.https);
  }
  const question = `Recover from ${best.path}?`;
  const go = ask.tty && !req.yes ? await ask.confirm(question) : req.yes;
  events.push({
    kind: 'prompt',
    message: question,
    data: { answer: go, session: 'recover', ...(ask.tty && !req.yes ? {} : { answeredBy: req.yes ? '--yes' : 'nobody: no terminal' }) },
  });
  if (!go) throw new RefusedError(ask.tty ? 'recovery not confirmed; nothing was changed' : 'recovery needs --yes without a terminal; nothing was changed');
  return {
    plan,
    sets: recoverSets(plan, req.discardUncommitted, [...tlsSets.filter((s) => !givenNames(req.sets).has(s.split('=')[0])), ...req.sets]),
    events,
    promptDefaults: recoverDefaults(plan),
  };
}

export const TLS_DIR_QUESTION = `The members' URLs are https://: directory of each member's certificates, ${NAME_PLACEHOLDER} for the member's name (holding server.crt, server.key, peer.crt, peer.key, ca.crt, as kubeadm names them), e.g. /etc/etcd/pki/${NAME_PLACEHOLDER}:`;

function givenNames(sets: string[]): Set<string> {
  return new Set(sets.map((s) => s.split('=')[0].trim()));
}

interface SurvivorTls {
  detected?: DetectedTls;
  /** https:// URLs with no TLS settings known: the URLs */
  unknown?: string;
  /** which sides are https:// */
  https: { client: boolean; peer: boolean };
  /** the line shown with the plan */
  line?: string;
}

/**
 * TLS as the survivor served it: its own settings when a file of its own says
 * them (survivorTls.ts), else whether its membership's URLs are https:// — then
 * the certificates must be given (--set, or asked). The operator's --set of any
 * certificate variable means they are given.
 */
function survivorTls(plan: RecoveryPlan, operatorSets: string[]): SurvivorTls {
  const best = plan.sources[plan.recommended];
  const members = best.report?.members ?? best.snapshot?.members ?? [];
  const me = best.report?.members.find((m) => m.id === best.report?.memberId);
  const clientUrls = members.flatMap((m) => m.clientURLs).filter((u) => u.startsWith('https://'));
  const peerUrls = members.flatMap((m) => m.peerURLs).filter((u) => u.startsWith('https://'));
  const https = { client: clientUrls.length > 0, peer: peerUrls.length > 0 };
  const given = givenNames(operatorSets);
  if (['cert-file', 'peer-cert-file'].some((v) => given.has(v))) return { https };
  const detected = best.kind !== 'data-dir' ? undefined : detectSurvivorTls(best.path, me?.name || undefined, process.env[HOST_ROOT_ENV] || '/');
  if (detected) {
    const shown = Object.entries(detected.sets).map(([k, v]) => `${k}=${v}`);
    return { detected, https, line: `TLS: the survivor's settings in ${detected.from}, for every member: ${shown.join(' ')}` };
  }
  if (!https.client && !https.peer) return { https };
  const urls = [...new Set([...clientUrls, ...peerUrls])];
  return { https, unknown: `${urls.slice(0, 2).join(', ')}${urls.length > 2 ? ', …' : ''}` };
}

/** The TLS variables for a directory per member ({name}), in kubeadm's file names, for the sides that are https://. */
function tlsDirSets(dir: string, https: { client: boolean; peer: boolean }): string[] {
  const d = dir.replace(/\/+$/, '');
  return [
    ...(https.client ? [`cert-file=${d}/server.crt`, `key-file=${d}/server.key`, `trusted-ca-file=${d}/ca.crt`, 'client-cert-auth=true'] : []),
    ...(https.peer ? [`peer-cert-file=${d}/peer.crt`, `peer-key-file=${d}/peer.key`, `peer-trusted-ca-file=${d}/ca.crt`, 'peer-client-cert-auth=true'] : []),
  ];
}

/** Shows what each cluster holds and asks which one to recover: typed, with no default. */
async function askCluster(e: MixedClustersError, ask: RecoverAsk, events: SessionEvent[]): Promise<string> {
  const ids = e.overview.clusters.flatMap((g) => (g.clusterId === null ? [] : [g.clusterId]));
  // Only an unknown-cluster snapshot among the sources: there is no cluster to name.
  if (ids.length < 2) throw e;
  const overview = formatOverview(e.overview);
  ask.show(overview);
  events.push({ kind: 'note', message: e.message, data: { text: overview, session: 'recover' } });
  let message = `${CLUSTER_QUESTION} (${ids.join(' or ')}):`;
  for (let attempt = 1; attempt <= CLUSTER_ATTEMPTS; attempt++) {
    const answer = (await ask.input(message)).trim();
    events.push({ kind: 'prompt', message, data: { answer, session: 'recover' } });
    const id = parseHexId(answer);
    if (id !== undefined && ids.includes(formatId(id))) return formatId(id);
    message = `"${answer}" is none of these clusters; type one of ${ids.join(', ')}:`;
  }
  throw new RefusedError(`no cluster chosen among ${ids.join(', ')}; nothing was changed`);
}

/** What the plan knows fills the playbook's variables; the operator's --set wins. */
export function recoverSets(plan: RecoveryPlan, discardUncommitted: boolean, operatorSets: string[]): string[] {
  const best = plan.sources[plan.recommended];
  const me = best.report?.members.find((m) => m.id === best.report?.memberId);
  const preset = [`source=${best.path}`];
  if (me?.name) preset.push(`name=${me.name}`);
  if (me?.peerURLs[0]) preset.push(`peer-url=${me.peerURLs[0]}`);
  if (discardUncommitted) preset.push('discard-uncommitted=true');
  if (plan.lastRevision !== undefined) preset.push(`last-revision=${plan.lastRevision}`);
  // The other survivors' data dirs are on this host: fenced once the new cluster is verified (another cluster's, never).
  const chosen = plan.clusters.find((g) => g.sources.includes(plan.recommended));
  const others = plan.sources.filter((s, i) => i !== plan.recommended && s.report && chosen?.sources.includes(i)).map((s) => s.path);
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
  out['data-dir'] = best.backup
    ? newDirBeside(path.join(process.cwd(), 'recovered'), 'recovered')
    : newDirBeside(best.path, me?.name || path.basename(best.path));
  if (me?.clientURLs[0]) out['client-url'] = me.clientURLs[0];
  const others = (report?.members ?? best.snapshot?.members ?? []).filter(
    (m) => m.id !== report?.memberId && m.name !== '' && m.peerURLs[0] && m.clientURLs[0] && !isHelperRecord(m, me, report),
  );
  out.members = [...others]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((m) => ({ name: m.name, peerUrl: m.peerURLs[0], clientUrl: m.clientURLs[0], dataDir: newDirBeside(best.path, m.name) }));
  return out;
}
