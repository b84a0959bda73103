// Checking a variable's value on this host when it is entered — at the prompt,
// from --set or --vars, or on `resume --set` — instead of twelve questions later
// at the step that uses it. What to check follows from where the playbook uses the
// variable: a step parameter declares its check (stepTypes.ts, `check`), and the
// variable feeding it (`${vars.NAME}`, or a member field `${m.peerUrl}` of a
// for-each over `${vars.NAME}`) takes it on.
//   source        exists, readable, a member's data dir (Lifeboat or etcd) or a snapshot;
//                 or a backup point, STORE@POINT, well formed (the store is read later)
//   new-data-dir  not an existing file
//   listen-url    when the URL's host is this host, its port is free — unless the
//                 playbook stops that member first (stop-member), as a restart does
import fs from 'node:fs';
import os from 'node:os';
import { runtimeOfDataDir } from '../ops/runtime.js';
import { snapshotKind } from '../recovery/snapshotFormat.js';
import { fencedDataDirProblem } from '../recovery/fenceRecord.js';
import { parseTemplate } from './interpolate.js';
import type { PlanNode, Playbook } from './schema.js';
import type { EntryCheck } from './stepTypes.js';
import type { StepLibrary } from './validate.js';
import { isMemberSpec } from './values.js';
import { bindError } from '../common/ports.js';
import { parseBackupSource } from '../backup/backupSource.js';

type MemberField = 'peerUrl' | 'clientUrl' | 'dataDir';
const MEMBER_FIELDS: readonly string[] = ['peerUrl', 'clientUrl', 'dataDir'];

export interface VariableCheck {
  kind: EntryCheck;
  /** the variable is a list of members: check this field of each */
  field?: MemberField;
}

/** Checks every variable takes on from the step parameters it feeds. */
export type VariableChecks = Map<string, VariableCheck[]>;

/** What each variable of `pb` must be on this host, from the parameters that use it. */
export function variableChecks(pb: Playbook, library: StepLibrary): VariableChecks {
  const found: Array<{ variable: string; check: VariableCheck }> = [];
  const stopped = new Set<string>();
  const walk = (nodes: PlanNode[], items: Map<string, string>): void => {
    for (const n of nodes) {
      if (n.kind === 'for-each') {
        const list = wholeRef(n.forEach.value);
        const inner = new Map(items);
        if (list?.root === 'vars' && list.path.length === 1) inner.set(n.as, list.path[0]);
        else inner.delete(n.as);
        walk(n.steps, inner);
        continue;
      }
      const def = library[n.type];
      if (!def) continue;
      const remote = n.with.remote?.value === true;
      for (const [param, node] of Object.entries(n.with)) {
        const ref = wholeRef(node.value);
        if (!ref) continue;
        let target: { variable: string; field?: MemberField } | undefined;
        if (ref.root === 'vars' && ref.path.length === 1) target = { variable: ref.path[0] };
        else if (items.has(ref.root) && ref.path.length === 1 && MEMBER_FIELDS.includes(ref.path[0]))
          target = { variable: items.get(ref.root) ?? '', field: ref.path[0] as MemberField };
        if (!target) continue;
        if (n.type === 'stop-member') stopped.add(target.variable);
        const kind = def.params[param]?.check;
        if (!kind || (kind === 'listen-url' && remote)) continue;
        found.push({ variable: target.variable, check: { kind, ...(target.field ? { field: target.field } : {}) } });
      }
    }
  };
  walk(pb.steps, new Map());
  const out: VariableChecks = new Map();
  for (const { variable, check } of found) {
    // A member the playbook stops first (a restart) listens on its ports now: that is expected.
    if (check.kind === 'listen-url' && stopped.has(variable)) continue;
    const list = out.get(variable) ?? [];
    if (!list.some((c) => c.kind === check.kind && c.field === check.field)) list.push(check);
    out.set(variable, list);
  }
  return out;
}

function wholeRef(value: unknown): { root: string; path: string[] } | undefined {
  if (typeof value !== 'string') return undefined;
  const t = parseTemplate(value);
  if ('error' in t || !t.whole) return undefined;
  const ref = t.parts[0];
  return typeof ref === 'string' ? undefined : ref;
}

/** Why `value` (already converted to its type) fails one of `checks` on this host, if it does. */
export async function entryProblem(checks: readonly VariableCheck[] | undefined, value: unknown): Promise<string | undefined> {
  for (const c of checks ?? []) {
    if (c.field) {
      const members = Array.isArray(value) ? value : [value];
      for (const m of members) {
        if (!isMemberSpec(m)) continue;
        const v = m[c.field];
        if (v === undefined) continue;
        const bad = await checkOne(c.kind, v);
        if (bad) return `member ${m.name}: ${bad}`;
      }
    } else if (typeof value === 'string') {
      const bad = await checkOne(c.kind, value);
      if (bad) return bad;
    }
  }
  return undefined;
}

async function checkOne(kind: EntryCheck, value: string): Promise<string | undefined> {
  switch (kind) {
    case 'source':
      return sourceProblem(value);
    case 'new-data-dir':
      return newDataDirProblem(value);
    case 'listen-url':
      return listenUrlProblem(value);
  }
}

function sourceProblem(p: string): string | undefined {
  try {
    if (parseBackupSource(p)) return undefined;
  } catch (e) {
    return (e as Error).message;
  }
  let st: fs.Stats;
  try {
    st = fs.statSync(p);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? `${p} does not exist; check the path` : `${p} cannot be read (${code ?? (e as Error).message})`;
  }
  try {
    fs.accessSync(p, st.isDirectory() ? fs.constants.R_OK | fs.constants.X_OK : fs.constants.R_OK);
  } catch {
    return `${p} is not readable by this user; run as the member's user (or root)`;
  }
  if (st.isDirectory()) {
    try {
      if (!runtimeOfDataDir(p))
        return (
          fencedDataDirProblem(p) ??
          `${p} is a directory but not a member's data dir (no member/ with a Lifeboat or etcd backend in it); name the survivor's --data-dir`
        );
    } catch (e) {
      return (e as Error).message;
    }
    return undefined;
  }
  if (!st.isFile()) return `${p} is neither a data dir nor a snapshot file`;
  try {
    const k = snapshotKind(p);
    if (k.format === 'unknown') return `${p} is not a snapshot lifeboat can read (${k.detail}) nor a data dir`;
  } catch (e) {
    return `${p} cannot be read (${(e as Error).message})`;
  }
  return undefined;
}

function newDataDirProblem(p: string): string | undefined {
  try {
    if (!fs.statSync(p).isDirectory()) return `${p} exists and is not a directory; name a new data dir`;
  } catch {
    // absent: it will be created
  }
  return undefined;
}

/** The host names and addresses that are this host. */
function localHosts(): Set<string> {
  const hosts = new Set(['localhost', '0.0.0.0', '::', os.hostname().toLowerCase()]);
  for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) hosts.add(a.address.toLowerCase());
  return hosts;
}

async function listenUrlProblem(text: string): Promise<string | undefined> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `${JSON.stringify(text)} is not a valid URL`;
  }
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (!localHosts().has(host) && !host.startsWith('127.')) return undefined; // a member on another host
  const port = Number(url.port);
  const bindHost = host === 'localhost' || host === os.hostname().toLowerCase() ? '127.0.0.1' : host;
  const code = await bindError(port, bindHost);
  if (code === 'EADDRINUSE') return `port ${port} of ${text} is in use on this host (another process listens there); choose a free port or stop that process`;
  return undefined;
}
