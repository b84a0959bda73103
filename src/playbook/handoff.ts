// The end of a run that started or re-created members: they run as processes the
// CLI started, so hand them over to the host's supervisor. From the run's record
// (every start-member step that succeeded, in any attempt) this prints, per
// member: its command line, the environment file written next to its data dir,
// the systemd unit that uses it, and the old data dir that unit must no longer
// point at; `--supervisor systemd` also writes the units to `--unit-dir`
// (src/ops/supervisor.ts writes the files). `--supervisor none` writes nothing.
import fs from 'node:fs';
import path from 'node:path';
import type { AuditLog } from '../audit/index.js';
import { formatInitialCluster } from '../common/initialCluster.js';
import { memberCommandLine, memberEnvironment, type MemberSettings, type RuntimeName } from '../common/memberCommand.js';
import { parseInitialCluster } from '../server/config.js';
import { envFileOf, envFileText, handOverDataDir, unitNameOf, unitText, writeFileAtomic, type ServiceUser, type SupervisorMode } from '../ops/supervisor.js';

export interface HandoffOptions {
  mode: SupervisorMode;
  /** where `systemd` writes the units */
  unitDir?: string;
  serviceUser?: ServiceUser;
}

export interface HandoffMember {
  name: string;
  runtime: RuntimeName;
  dataDir: string;
  remote: boolean;
  pid: number;
  log: string;
  command: string;
  envFile: string;
  unit: string;
  /** written to --unit-dir (systemd) */
  unitFile?: string;
  /** the data dir the member's old unit used, when the run knows it */
  oldDataDir?: string;
  /** the old member's host, when its data dir is there */
  oldHost?: string;
  /** the old cluster had no member of this name */
  isNew?: boolean;
}

export interface Handoff {
  members: HandoffMember[];
  lines: string[];
  /** files that could not be written or handed over */
  problems: string[];
}

interface StartOutputs {
  name?: string;
  dataDir?: string;
  runtime?: string;
  remote?: boolean;
  etcdBin?: string;
  pid?: number;
  log?: string;
  settings?: Array<[string, string]>;
}

/**
 * What each member replaces: the restore step's source for the restored member, a
 * fenced old data dir on this host by member name, else the old member of that name
 * on its host (the fence step named it); a name the old cluster did not have is new.
 */
function oldDataDirs(
  audit: AuditLog,
  runId: string,
  restores: Array<{ dataDir: string; source: string }>,
): (m: { name: string; dataDir: string }) => { dir?: string; host?: string; isNew?: boolean } {
  const dirByName = new Map<string, string>();
  const hostByName = new Map<string, string>();
  for (const e of audit.events(runId)) {
    const d = (e.data ?? {}) as { name?: unknown; dataDir?: unknown; host?: unknown };
    if (typeof d.name !== 'string' || !['fence', 'note', 'warning'].includes(e.kind)) continue;
    if (typeof d.dataDir === 'string') dirByName.set(d.name, d.dataDir);
    if (typeof d.host === 'string') hostByName.set(d.name, d.host);
  }
  const known = dirByName.size + hostByName.size > 0;
  return (m) => {
    const restored = restores.find((r) => path.resolve(r.dataDir) === path.resolve(m.dataDir));
    if (restored) return { dir: restored.source };
    const dir = dirByName.get(m.name);
    if (dir) return { dir };
    const host = hostByName.get(m.name);
    if (host) return { host };
    return known ? { isNew: true } : {};
  };
}

/** A start's setting, or undefined. */
function setting(o: StartOutputs, key: string): string | undefined {
  return o.settings?.find(([k]) => k === key)?.[1];
}

/**
 * The cluster the run leaves: the last member started joined the membership it
 * was given (every member up to it), and each started member is at its own peer
 * URLs.
 */
function finalMembership(startsInOrder: StartOutputs[]): Map<string, string[]> {
  const last = startsInOrder.at(-1);
  let out = new Map<string, string[]>();
  try {
    out = parseInitialCluster(last ? (setting(last, 'initial-cluster') ?? '') : '');
  } catch {
    // the member started with it; unreadable here, the started members alone remain
  }
  for (const o of startsInOrder) {
    const urls = setting(o, 'initial-advertise-peer-urls');
    if (typeof o.name === 'string' && urls) out.set(o.name, urls.split(','));
  }
  return out;
}

/**
 * A handed-over member's cluster exists: its settings say `existing` with the whole
 * membership, never `new` (started on a wiped data dir, `new` would bootstrap a
 * fresh one-member cluster of the same name; `existing` joins or fails). With its
 * data dir present, etcd and Lifeboat ignore both settings.
 */
function handedOverSettings(settings: MemberSettings, membership: Map<string, string[]>): MemberSettings {
  const replaced: Record<string, string> = { 'initial-cluster': formatInitialCluster(membership), 'initial-cluster-state': 'existing' };
  // Discovery is for bootstrap only: a handed-over member (and its env file and unit) never carries it.
  const out = settings.filter(([k]) => !k.startsWith('discovery')).map(([k, v]) => [k, replaced[k] ?? v] as const);
  for (const [k, v] of Object.entries(replaced)) if (!settings.some(([key]) => key === k)) out.push([k, v]);
  return out;
}

/** Hands the members run `runId` started over to the supervisor; never throws for a file it cannot write (see problems). */
export function handOffMembers(audit: AuditLog, runId: string, runDir: string, opts: HandoffOptions): Handoff {
  const steps = audit.lastRunState(runId).steps.filter((s) => s.status === 'succeeded' || s.status === 'skipped');
  const starts = new Map<string, StartOutputs>();
  for (const s of steps) {
    const o = (s.outputs ?? {}) as StartOutputs;
    if (s.type === 'start-member' && typeof o.name === 'string' && typeof o.dataDir === 'string' && Array.isArray(o.settings)) starts.set(o.name, o);
  }
  const membership = finalMembership(steps.filter((s) => s.type === 'start-member').map((s) => (s.outputs ?? {}) as StartOutputs));
  const restores = steps
    .filter((s) => s.type === 'restore')
    .map((s) => s.inputs as { 'data-dir'?: unknown; source?: unknown })
    .filter((i) => typeof i['data-dir'] === 'string' && typeof i.source === 'string')
    .map((i) => ({ dataDir: String(i['data-dir']), source: String(i.source) }));
  const oldOf = oldDataDirs(audit, runId, restores);
  const out: Handoff = { members: [], lines: [], problems: [] };
  if (starts.size === 0) return out;

  const user = opts.serviceUser;
  const owner = user ? `, owner ${user.name}` : '';
  const units: Array<[string, string]> = [];
  for (const o of starts.values()) {
    const runtime: RuntimeName = o.runtime === 'etcd' ? 'etcd' : 'lifeboat';
    const settings = handedOverSettings(
      (o.settings ?? []).map(([k, v]) => [String(k), String(v)] as const),
      membership,
    );
    const m: HandoffMember = {
      name: o.name ?? '',
      runtime,
      dataDir: o.dataDir ?? '',
      remote: o.remote === true,
      pid: Number(o.pid ?? 0),
      log: o.log ?? '',
      command: memberCommandLine(runtime, settings),
      envFile: envFileOf(o.dataDir ?? ''),
      unit: unitNameOf(runtime, o.name ?? ''),
    };
    const old = oldOf(m);
    if (old.dir !== undefined) m.oldDataDir = old.dir;
    if (old.host !== undefined) m.oldHost = old.host;
    if (old.isNew) m.isNew = true;
    const unit = unitText({ runtime, name: m.name, envFile: m.envFile, ...(o.etcdBin ? { etcdBin: o.etcdBin } : {}), ...(user ? { user } : {}) });
    const header = [`${m.name} (${runtime}), written by lifeboat run ${runId}: the settings it was started with.`, `Used by ${m.unit} (EnvironmentFile=).`];
    if (opts.mode !== 'none' && !m.remote) {
      try {
        if (fs.existsSync(m.dataDir)) handOverDataDir(m.dataDir, user);
        writeFileAtomic(m.envFile, envFileText(runtime, settings, header), 0o600, user);
        if (opts.mode === 'systemd' && opts.unitDir) {
          m.unitFile = path.join(opts.unitDir, m.unit);
          writeFileAtomic(m.unitFile, unit, 0o644);
        }
      } catch (e) {
        out.problems.push(`${m.name}: ${(e as Error).message}`);
      }
    }
    out.members.push(m);
    units.push([m.unit, unit]);
    const l = out.lines;
    if (opts.mode === 'none') {
      l.push(`  ${m.name} (${runtime}${m.pid ? `, pid ${m.pid}` : ''}): ${m.command}`);
      continue;
    }
    l.push(`  ${m.name} (${runtime}${m.remote ? ', on its own host' : m.pid ? `, pid ${m.pid}` : ''}${m.log ? `, log ${m.log}` : ''})`);
    l.push(`    command       ${m.command}`);
    if (m.remote) {
      l.push(`    env file      ${m.envFile} on its host (mode 0600${owner}), holding:`);
      for (const [k, v] of memberEnvironment(runtime, settings)) l.push(`                    ${k}=${v}`);
    } else {
      l.push(`    env file      ${m.envFile} (${runtime === 'etcd' ? 'ETCD_*' : 'LIFEBOAT_*'}, mode 0600${owner})`);
      l.push(`    data dir      ${m.dataDir} (mode 0700${owner})`);
    }
    l.push(`    unit          ${m.unitFile ?? `${m.unit} (below)`}`);
    l.push(
      `    old data dir  ${
        m.oldDataDir !== undefined
          ? `${m.oldDataDir}: superseded; no unit may start it again (disable or edit the unit that used it)`
          : m.isNew
            ? `none: the old cluster had no member ${m.name}`
            : `the one ${m.name}'s old unit used, on ${m.oldHost ?? 'its host'}: superseded; disable or edit that unit`
      }`,
    );
  }
  const local = out.members.filter((m) => !m.remote && m.pid > 0);
  const head =
    opts.mode === 'none'
      ? ['', `Members this run started (--supervisor none: nothing written; put them under your supervisor, logs in ${runDir}):`]
      : [
          '',
          `Hand-off: ${out.members.length === 1 ? 'this member runs as a process' : 'these members run as processes'} this run started (logs in ${runDir}); after a reboot only the host's supervisor starts members, and the old units would start the old, superseded data dirs.`,
        ];
  out.lines.unshift(...head);
  if (opts.mode === 'print') {
    for (const [name, text] of units) {
      out.lines.push(`  --- ${name} ---`);
      for (const t of text.trimEnd().split('\n')) out.lines.push(`  ${t}`);
    }
  }
  if (opts.mode !== 'none') {
    const dir = opts.mode === 'systemd' && opts.unitDir ? opts.unitDir : '/etc/systemd/system';
    out.lines.push(
      `Switch over${opts.mode === 'print' ? ` (install each unit as ${dir}/NAME.service)` : ''}: systemctl daemon-reload; then one member at a time: ${
        local.length > 0
          ? local.map((m) => `kill -TERM ${m.pid} && systemctl enable --now ${m.unit}`).join('; ')
          : out.members.map((m) => `systemctl enable --now ${m.unit}`).join('; ')
      }`,
    );
  }
  for (const p of out.problems) out.lines.push(`  hand-off problem: ${p}`);
  return out;
}
