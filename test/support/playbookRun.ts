// A scripted playbook run as a runbook makes it: `lifeboat playbook run NAME --yes
// --reason … --audit-db … --set K=V …`, no terminal, bounded in time.
import path from 'node:path';
import { ROOT, run, type RunResult } from './tools.js';

const BIN = path.join(ROOT, 'bin', 'run.js');

export interface PlaybookRunOptions {
  /** more flags (connection, TLS, --user) */
  extra?: string[];
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

/** The run's result, with stdout and stderr together in `out` for messages. */
export async function playbookRun(
  name: string,
  sets: Record<string, string>,
  auditDb: string,
  opts: PlaybookRunOptions = {},
): Promise<RunResult & { out: string }> {
  const args = [BIN, 'playbook', 'run', name, '--yes', '--reason', `test: ${name}`, '--audit-db', auditDb];
  for (const [k, v] of Object.entries(sets)) args.push('--set', `${k}=${v}`);
  args.push(...(opts.extra ?? []));
  const r = await run(process.execPath, args, { timeoutMs: opts.timeoutMs ?? 240_000, ...(opts.env ? { env: opts.env } : {}) });
  return { ...r, out: `${r.stdout}\n${r.stderr}` };
}

/** The recovery playbook's `members` variable: `name=peerURL,clientURL,dataDir` per member, `;` between. */
export function membersVar(members: ReadonlyArray<{ name: string; peerUrl: string; clientUrl: string; dataDir: string }>): string {
  return members.map((m) => `${m.name}=${m.peerUrl},${m.clientUrl},${m.dataDir}`).join(';');
}
