// What `playbook run`, `playbook resume` (and `lifeboat recover`) do between
// parsing their flags and printing: find and validate the playbook, bind its
// variables (prompting on a terminal, failing fast without one), dry-run or run
// it with the view the cli gives, and say how it ended — the run ID and the audit
// chain's head hash — with its outcome. The terminal (view, prompts, Ctrl-C) is
// the caller's SessionIo; nothing here prints or exits.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { AuditDbMissingError, openAuditLogForWriting, resolveAuditDbPath, UnknownRunError, type AuditLog } from '../audit/index.js';
import { InputError, RefusedError } from '../common/errors.js';
import { shellQuote } from '../common/memberCommand.js';
import { SECRET_MARK, SecretScrubber } from '../audit/secretDigest.js';
import { lookupServiceUser, SUPERVISOR_MODES, type ServiceUser, type SupervisorMode } from '../ops/supervisor.js';
import { settleCredentials, type CredentialCheck } from './credentials.js';
import { entryProblem, variableChecks } from './entryChecks.js';
import { handOffMembers, type Handoff } from './handoff.js';
import { dryRunJson, formatDryRun } from './dryRun.js';
import { runPlaybook, type RunResult } from './engine.js';
import { NotConfirmedError, PlaybookInvalidError, RunInterruptedError } from './errors.js';
import { loadStepLibrary, type LoadedLibrary } from './library.js';
import { locatePlaybook, shippedPlaybooksDir } from './locate.js';
import { readPlaybookWithProblems } from './parse.js';
import { planRun } from './plan.js';
import { preflightProblem } from './preflight.js';
import { checkResumable, completedStepsUsing, recordedRun, recordedVariables, resumeState } from './resume.js';
import type { RunView } from './runView.js';
import type { Playbook } from './schema.js';
import { hiddenVariable, secretEnvName, secretValues } from './secrets.js';
import type { StepContext } from './stepTypes.js';
import { validatePlaybook } from './validate.js';
import { bindVariables, formatBound, type BoundVariables, type ValueCheck, type VariableAsker } from './variables.js';
import { formatValue } from './values.js';

export type Connection = StepContext['connection'];

/** The question recorded with the reason when it was asked on the terminal. */
export const REASON_QUESTION = 'Why are you running this playbook? (recorded in the audit log)';

/** The terminal side of a session, provided by src/cli (sessionIo.ts). */
export interface SessionIo {
  /** stdin and stdout are terminals */
  interactive: boolean;
  /** the run's view: a live task list when `interactive`, else plain log lines */
  view(interactive: boolean): RunView;
  /** asks for a variable's value (on a terminal) */
  askVariable: VariableAsker;
  /** asks why the run is made (on a terminal) */
  askReason(): Promise<string>;
  /** runs `fn` with a signal that the operator's Ctrl-C aborts */
  withInterrupt<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T>;
}

interface CommonRequest {
  /** the terminal: view, prompts, Ctrl-C */
  io: SessionIo;
  yes?: boolean;
  /** --audit-db (else $LIFEBOAT_AUDIT_DB, else the XDG state dir) */
  auditDb?: string;
  connection: Connection;
  /** --endpoints: the default of step parameters named endpoints */
  endpoints?: string;
  /** stdin and stdout are terminals (default: detected) */
  interactive?: boolean;
  /** -w json: log lines go to stderr, the result is JSON */
  json?: boolean;
  /** the step library (default: built-in + steps/ + any added through addStepTypes) */
  library?: LoadedLibrary;
  env?: NodeJS.ProcessEnv;
  /** handing the members the run starts to a supervisor (default: print) */
  supervisor?: SupervisorRequest;
  /** the flags the run was given, for the runbook line it prints */
  runbook?: RunbookSettings;
}

/** The settings a run was given, for its runbook line (scriptedEquivalent). */
export interface RunbookSettings {
  /** command-line words: every flag given, paths made absolute, no secret's text */
  flags: string[];
  /** environment variables the line reads its secrets from (LIFEBOAT_PASSWORD) */
  env: string[];
}

/** --supervisor, --unit-dir, --service-user */
export interface SupervisorRequest {
  mode?: string;
  unitDir?: string;
  serviceUser?: string;
}

interface Supervisor {
  mode: SupervisorMode;
  unitDir?: string;
  serviceUser?: ServiceUser;
}

/** The supervisor flags, checked before anything runs: one line, exit 2. */
export function resolveSupervisor(req: SupervisorRequest = {}): Supervisor {
  const mode = (req.mode ?? 'print') as SupervisorMode;
  if (!SUPERVISOR_MODES.includes(mode)) throw new InputError(`--supervisor ${req.mode}: expected ${SUPERVISOR_MODES.join(', ')}`);
  if (mode === 'systemd' && !req.unitDir)
    throw new InputError('--supervisor systemd needs --unit-dir DIR: where to write the unit files (e.g. /etc/systemd/system)');
  if (mode !== 'systemd' && req.unitDir) throw new InputError(`--unit-dir is only for --supervisor systemd (it is ${mode})`);
  if (mode === 'none' && req.serviceUser) throw new InputError('--service-user needs --supervisor print or systemd: with none nothing is handed over');
  let unitDir: string | undefined;
  if (req.unitDir) {
    unitDir = path.resolve(req.unitDir);
    try {
      if (!statSync(unitDir).isDirectory()) throw new InputError(`--unit-dir ${req.unitDir} is not a directory`);
    } catch (e) {
      if (e instanceof InputError) throw e;
      throw new InputError(`--unit-dir ${req.unitDir} does not exist; create it first`);
    }
  }
  return { mode, ...(unitDir ? { unitDir } : {}), ...(req.serviceUser ? { serviceUser: lookupServiceUser(req.serviceUser) } : {}) };
}

export interface PlaybookRunRequest extends CommonRequest {
  /** a shipped playbook's NAME, or a FILE */
  target: string;
  varsFile?: string;
  /** NAME=VALUE, repeatable */
  sets?: string[];
  /** values from code (e.g. what `lifeboat recover` found), below --vars and --set */
  given?: Record<string, unknown>;
  /** NAME=VALUE worked out by the caller (`lifeboat recover`'s plan), below --set; recorded as the plan's */
  planned?: string[];
  dryRun?: boolean;
  reason?: string;
  /** the operator typed --endpoints: it also fills a variable named endpoints */
  endpointsGiven?: boolean;
  /** timeline events to record when the run starts (e.g. the plan `lifeboat recover` showed), each `at` when it happened */
  events?: Array<{ kind: string; message: string; data?: Record<string, unknown>; at?: string }>;
  /** defaults offered at the prompts instead of the playbook's (on a terminal only) */
  promptDefaults?: Record<string, unknown>;
}

export interface PlaybookResumeRequest extends CommonRequest {
  runId: string;
  /** why it is resumed (optional) */
  reason?: string;
  /** which of connection/endpoints the operator gave explicitly (else the recorded ones are used) */
  explicit?: { endpoints?: boolean; connection?: boolean };
  /** NAME=VALUE: change a variable no completed step used */
  sets?: string[];
}

export interface SessionResult {
  /** the human summary, for stdout */
  text: string;
  /** the -w json result */
  json: unknown;
  /** the run did not succeed: throw this (src/cli sets the exit code from the run's outcome) */
  error?: Error;
  run?: RunResult;
}

/** Loads, validates and lays out a playbook: everything `run --dry-run` and `show` check. */
export function loadValidPlaybook(target: string, library: LoadedLibrary): Playbook {
  const { playbook, problems } = readPlaybookWithProblems(locatePlaybook(target));
  validatePlaybook(playbook, library.library, problems);
  return playbook;
}

/** `lifeboat playbook run`: validate, bind, then dry-run or run. */
export async function runPlaybookSession(req: PlaybookRunRequest): Promise<SessionResult> {
  const env = req.env ?? process.env;
  const library = req.library ?? loadStepLibrary();
  const pb = loadValidPlaybook(req.target, library);
  const interactive = req.interactive ?? req.io.interactive;
  if (!req.dryRun && !interactive && (req.reason === undefined || req.reason.trim() === '')) {
    throw new InputError('--reason is required when there is no terminal to ask on: it is recorded in the audit log with the run');
  }
  const supervisor = resolveSupervisor(req.supervisor);
  const bound = await cancellable(() =>
    bindVariables(pb, {
      ...(req.varsFile !== undefined ? { varsFile: req.varsFile } : {}),
      ...(req.sets ? { sets: req.sets } : {}),
      ...(req.planned ? { planned: req.planned } : {}),
      ...(req.given ? { given: req.given } : {}),
      ...(req.endpointsGiven && req.endpoints !== undefined ? { endpoints: req.endpoints } : {}),
      ...(interactive ? { ask: req.io.askVariable } : {}),
      ...(interactive && req.promptDefaults ? { promptDefaults: req.promptDefaults } : {}),
      check: hostChecks(pb, library),
      env,
    }),
  );
  const shown = secretsShown(pb, bound, req.connection);
  const plan = planRun(pb, library.library, bound.values, req.endpoints);
  throwScrubbed(() => plan.problems.throwIfAny(), shown);
  throwScrubbed(() => throwPreflight(plan, library), shown);
  if (req.dryRun) {
    // What a dry-run prints is what the plan holds, secrets replaced: resolved parameters may carry them.
    const shownPlan = { ...plan, entries: plan.entries.map((e) => shown.value(e)) };
    const shownBound = { ...bound, values: shown.value(bound.values) };
    return { text: shown.text(formatDryRun(pb, shownBound, shownPlan)), json: dryRunJson(pb, shownBound, shownPlan) };
  }

  // The password is asked (if it must be) and checked now, before the reason and the first step: never mid-run.
  const connection = await cancellable(() => settleCredentials(req.connection, credentialCheck(bound.values, req.endpointsGiven ? req.endpoints : undefined)));
  let reason = req.reason?.trim() ?? '';
  let reasonPrompt: string | undefined;
  let reasonAt: string | undefined;
  if (reason === '') {
    reason = await cancellable(() => req.io.askReason());
    reasonPrompt = REASON_QUESTION;
    reasonAt = new Date().toISOString();
  }
  const audit = openAuditLogForWriting(req.auditDb);
  try {
    const view = makeView(req, interactive);
    view.log(`Variables:`);
    for (const l of pb.variables.length ? formatBound(pb, bound) : ['(none)']) view.log(`  ${l}`);
    const result = await req.io.withInterrupt((signal) =>
      runPlaybook({
        playbook: pb,
        library: library.library,
        variables: bound,
        audit,
        view,
        reason,
        ...(reasonPrompt ? { reasonPrompt } : {}),
        ...(reasonAt ? { reasonAt } : {}),
        yes: req.yes ?? false,
        connection,
        ...(req.endpoints !== undefined ? { endpoints: req.endpoints } : {}),
        signal,
        startEvents: [...addedStepEvents(library), ...(req.events ?? [])],
      }),
    );
    const equivalent = interactive || result.outcome !== 'succeeded' ? scriptedEquivalent(req.target, pb, bound, reason, req.auditDb, req.runbook) : undefined;
    return summarize(result, audit, { handoff: handOffMembers(audit, result.runId, result.runDir, supervisor), equivalent });
  } finally {
    audit.close();
  }
}

/** `lifeboat playbook resume RUN_ID`: the recorded run, checked, continued. */
export async function resumePlaybookSession(req: PlaybookResumeRequest): Promise<SessionResult> {
  const env = req.env ?? process.env;
  const library = req.library ?? loadStepLibrary();
  const dbPath = resolveAuditDbPath(req.auditDb, env);
  if (!existsSync(dbPath)) throw new InputError(new AuditDbMissingError(dbPath).message);
  const audit = openAuditLogForWriting(req.auditDb);
  try {
    let rec;
    try {
      rec = recordedRun(audit, req.runId);
    } catch (err) {
      if (err instanceof UnknownRunError) throw new InputError(err.message);
      throw err;
    }
    const { playbook: pb, problems } = readPlaybookWithProblems(rec.file);
    checkResumable(audit, rec, pb);
    validatePlaybook(pb, library.library, problems);
    const supervisor = resolveSupervisor(req.supervisor);
    const recorded = recordedVariables(audit, rec.run);
    const interactive = req.interactive ?? req.io.interactive;
    // A secret was recorded as its digest only: it is given again (--set, LIFEBOAT_SECRET_<NAME>, or asked on a terminal).
    const bound: BoundVariables = await cancellable(() =>
      bindVariables(pb, {
        given: recorded,
        ...(req.sets ? { sets: req.sets } : {}),
        check: hostChecks(pb, library),
        env,
        ...(interactive ? { ask: req.io.askVariable } : {}),
      }),
    );
    const changes = changedVariables(pb, recorded, bound, (v) => audit.secretDigest(v));
    const resumeFrom = resumeState(audit, req.runId, req.reason);
    for (const c of changes) {
      const used = completedStepsUsing(pb, resumeFrom, c.name);
      if (used.length > 0)
        throw new RefusedError(
          `variable ${c.name} cannot change: completed step ${used.join(', ')} used ${c.from}; only variables of steps that have not run can change on resume (start a new run to change it)`,
        );
    }
    const endpoints = req.explicit?.endpoints || !rec.endpoints ? req.endpoints : rec.endpoints;
    const recordedConn = rec.connection;
    // The password was never recorded: a run made as a user resumes only with that user's credentials given again.
    if (recordedConn?.user && !req.connection.credentials)
      throw new InputError(
        `run ${req.runId} was made as user ${recordedConn.user}: give --user ${recordedConn.user} again (its password from --password, LIFEBOAT_PASSWORD or ETCDCTL_PASSWORD, or asked on a terminal)`,
      );
    const { user: _user, ...recordedRest } = recordedConn ?? {};
    const chosen =
      req.explicit?.connection || !recordedConn
        ? req.connection
        : { ...(recordedRest as Connection), ...(req.connection.credentials ? { credentials: req.connection.credentials } : {}) };
    const connection = await cancellable(() => settleCredentials(chosen, credentialCheck(bound.values, endpoints)));
    const plan = planRun(pb, library.library, bound.values, endpoints);
    throwScrubbed(() => plan.problems.throwIfAny(), secretsShown(pb, bound, connection));
    throwScrubbed(() => throwPreflight(plan, library), secretsShown(pb, bound, connection));
    const view = makeView(req, interactive);
    const result = await req.io.withInterrupt((signal) =>
      runPlaybook({
        playbook: pb,
        library: library.library,
        variables: bound,
        audit,
        view,
        reason: rec.run.reason,
        resume: resumeFrom,
        yes: req.yes ?? false,
        connection,
        ...(endpoints !== undefined ? { endpoints } : {}),
        ...(rec.runDir ? { runDir: rec.runDir } : {}),
        signal,
        startEvents: [
          ...addedStepEvents(library),
          ...changes.map((c) => ({
            kind: 'variable',
            message: `variable ${c.name} changed on resume: ${c.from} -> ${c.to} (--set)`,
            data: { variable: c.name, from: recorded[c.name] ?? null, to: bound.values[c.name], by: '--set' },
          })),
        ],
      }),
    );
    const equivalent = result.outcome !== 'succeeded' ? scriptedEquivalent(rec.file, pb, bound, rec.run.reason, req.auditDb, req.runbook) : undefined;
    return summarize(result, audit, { handoff: handOffMembers(audit, result.runId, result.runDir, supervisor), equivalent });
  } finally {
    audit.close();
  }
}

/** Where the run's password is checked: its recovery source (a variable named source) if it exists, else its cluster. */
function credentialCheck(values: Record<string, unknown>, endpoints: string | undefined): CredentialCheck {
  const source = values.source;
  if (typeof source === 'string' && source !== '' && existsSync(source)) return { source: path.resolve(source) };
  const ep = values.endpoints;
  if (typeof ep === 'string' || Array.isArray(ep)) return { endpoints: ep as string | string[] };
  return endpoints !== undefined ? { endpoints } : {};
}

function makeView(req: CommonRequest, interactive: boolean): RunView {
  return req.io.view(interactive && !req.json);
}

/** A run with step types beyond the built-in ones (the tests' fake steps) records a warning naming them. */
function addedStepEvents(library: LoadedLibrary): Array<{ kind: string; message: string; data?: Record<string, unknown> }> {
  if (!library.added) return [];
  return [{ kind: 'warning', message: `step types added (not built in): ${library.added.join(', ')}`, data: { types: library.added } }];
}

/** The host checks of each variable (entryChecks.ts), from where the playbook uses it. */
function hostChecks(pb: Playbook, library: LoadedLibrary): ValueCheck {
  const checks = variableChecks(pb, library.library);
  return (def, value) => entryProblem(checks.get(def.name), value);
}

/**
 * The variables --set changed on resume, as an operator reads them. A secret is
 * given again however it was first given: it changed when its digest did.
 */
function changedVariables(
  pb: Playbook,
  recorded: Record<string, unknown>,
  bound: BoundVariables,
  digest: (v: string) => string,
): Array<{ name: string; from: string; to: string }> {
  const out: Array<{ name: string; from: string; to: string }> = [];
  for (const d of pb.variables) {
    const now = bound.values[d.name];
    if (d.type === 'secret') {
      if (typeof now !== 'string' || recorded[d.name] === digest(now)) continue;
    } else {
      if (bound.sources[d.name] !== 'set') continue;
      if (JSON.stringify(recorded[d.name]) === JSON.stringify(now)) continue;
    }
    const show = (v: unknown) => (hiddenVariable(d) ? SECRET_MARK : formatValue(v, d.type, d.items));
    out.push({ name: d.name, from: show(recorded[d.name]), to: show(now) });
  }
  return out;
}

/** What the terminal shows in place of the run's secrets: its secret variables and the --user password (when given as text). */
function secretsShown(pb: Playbook, bound: BoundVariables, connection: Connection): SecretScrubber {
  const shown = new SecretScrubber(() => SECRET_MARK);
  for (const v of secretValues(pb, bound.values)) shown.add(v);
  const password = connection.credentials?.password;
  if (typeof password === 'string') shown.add(password);
  return shown;
}

/** The run checked as a whole before its first step (preflight.ts): one line, exit 2. */
function throwPreflight(plan: ReturnType<typeof planRun>, library: LoadedLibrary): void {
  const problem = preflightProblem(plan, library.library);
  if (problem) throw new InputError(`${problem}; nothing was changed`);
}

/** Runs `fn`, rethrowing its error with the secrets replaced in the message. */
function throwScrubbed(fn: () => void, shown: SecretScrubber): void {
  try {
    fn();
  } catch (err) {
    if (err instanceof PlaybookInvalidError) for (const p of err.problems) p.message = shown.text(p.message);
    if (err instanceof Error) err.message = shown.text(err.message);
    throw err;
  }
}

/**
 * The same run, scripted: `lifeboat playbook run NAME --yes --reason … --set …`
 * with every flag the run was given (`runbook`) and every variable not left at its
 * default, shell-quoted, so that it runs as printed. A secret's text is never in
 * it: a secret variable is read from its environment variable, the password from
 * --password-file or LIFEBOAT_PASSWORD, named after the line.
 */
export function scriptedEquivalent(
  target: string,
  pb: Playbook,
  bound: BoundVariables,
  reason: string,
  auditDb?: string,
  runbook: RunbookSettings = { flags: [], env: [] },
): string {
  const shipped = path.dirname(pb.absPath) === shippedPlaybooksDir() ? pb.name : pb.absPath;
  const words = ['lifeboat', 'playbook', 'run', shipped === target ? target : shipped, '--yes', '--reason', reason];
  if (auditDb !== undefined) words.push('--audit-db', path.resolve(auditDb));
  words.push(...runbook.flags);
  const env = [...runbook.env];
  const leftOut: string[] = [];
  for (const d of pb.variables) {
    const v = bound.values[d.name];
    if (v === undefined || (d.hasDefault && JSON.stringify(v) === JSON.stringify(d.default))) continue;
    if (hiddenVariable(d)) {
      if (d.type === 'secret') env.push(secretEnvName(d.name));
      else leftOut.push(d.name);
      continue;
    }
    const text = Array.isArray(v) && v.length === 0 ? '' : formatValue(v, d.type, d.items);
    words.push('--set', `${d.name}=${d.type === 'list' && d.items === 'member' ? text.replace(/; /g, ';') : text}`);
  }
  const notes = [
    ...(env.length > 0 ? [`secrets from the environment: ${env.join(', ')}`] : []),
    ...(leftOut.length > 0 ? [`plus --set for ${leftOut.join(', ')} (secrets, left out)`] : []),
  ];
  const line = words.map((w) => shellQuote(w)).join(' ');
  return notes.length > 0 ? `${line}   # ${notes.join('; ')}` : line;
}

function summarize(r: RunResult, audit: AuditLog, extra: { handoff?: Handoff; equivalent?: string | undefined } = {}): SessionResult {
  const lines = [
    `Run ${r.runId} ${r.outcome}: ${r.ran.length} step${r.ran.length === 1 ? '' : 's'} run${r.skipped.length ? `, ${r.skipped.length} already done` : ''}.`,
  ];
  if (extra.handoff) lines.push(...extra.handoff.lines);
  if (extra.equivalent) lines.push(`The same run, scripted (for the runbook): ${extra.equivalent}`);
  lines.push(
    `Run ID: ${r.runId}`,
    `Audit chain head: ${r.head}`,
    `  (keep it outside the audit log; check it later with: lifeboat audit verify --head ${r.head} --audit-db ${audit.path})`,
  );
  if (r.outcome !== 'succeeded') {
    const cause = r.error && 'error' in r.error ? (r.error as { error: Error }).error : r.error;
    const yes = cause instanceof NotConfirmedError ? ' --yes' : '';
    lines.push(
      `Resume with: lifeboat playbook resume ${r.runId}${yes} --audit-db ${audit.path}  (add --set NAME=VALUE to correct a variable of a step not yet done)`,
    );
  }
  const json = {
    runId: r.runId,
    outcome: r.outcome,
    head: r.head,
    auditDb: audit.path,
    runDir: r.runDir,
    ran: r.ran,
    skipped: r.skipped,
    ...(r.failedStep ? { failedStep: r.failedStep } : {}),
    ...(r.error ? { error: r.error.message } : {}),
    ...(extra.handoff && extra.handoff.members.length > 0 ? { handoff: extra.handoff.members } : {}),
    ...(extra.equivalent ? { scripted: extra.equivalent } : {}),
  };
  let error: Error | undefined;
  if (r.outcome === 'refused') error = new RefusedError(`run ${r.runId} refused: ${r.error?.message ?? ''}`);
  else if (r.outcome === 'failed') error = new Error(`run ${r.runId} failed: ${r.error?.message ?? ''}`);
  else if (r.outcome === 'interrupted')
    error = new RunInterruptedError(`run ${r.runId} ${r.error?.message ?? 'interrupted'}; resume with 'lifeboat playbook resume ${r.runId}'`);
  if (!error && extra.handoff && extra.handoff.problems.length > 0)
    error = new Error(`run ${r.runId} succeeded, but the hand-off is incomplete: ${extra.handoff.problems.join('; ')}`);
  return { text: lines.join('\n'), json, run: r, ...(error ? { error } : {}) };
}

/** A prompt cancelled with Ctrl-C before the run started: nothing was run or recorded. */
async function cancellable<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const name = (err as Error).name;
    if (name === 'ExitPromptError' || name === 'AbortPromptError') throw new Error('cancelled at a prompt; nothing was run or recorded');
    throw err;
  }
}
