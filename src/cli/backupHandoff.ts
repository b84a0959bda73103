// `lifeboat backup run --print-unit`: the agent's hand-off to the host's
// supervisor, as a playbook hands over the members it starts: an environment
// file holding the settings given (LIFEBOAT_*; a password never: the file
// names where to put it) and the systemd unit that runs the agent from it.
import path from 'node:path';
import { MEMBER_NODE_FLAGS, shellQuote } from '../common/memberCommand.js';
import { envLine, systemdUnit } from '../ops/supervisor.js';
import { packageRoot } from '../ops/startMember.js';
import { envName } from './flagParser.js';

/**
 * Node's flags for the agent, before bin/run.js (V8 reads them only at start-up):
 * the member's, for the same reasons (memberCommand.ts). Under 100 clients' puts
 * V8's default young generation grew the agent's peak RSS from about 90 to over
 * 120 MiB; with them it stays under 100 MiB for the same CPU per revision
 * (`npm run bench -- backup`, bench/results/).
 */
export const AGENT_NODE_FLAGS: readonly string[] = MEMBER_NODE_FLAGS;

/** Flags that are never written to the env file: secrets, and the ones that only make sense once. */
const NOT_HANDED_OVER = new Set(['password', 'print-unit', 'force', 'debug', 'encrypt-to']);

export interface AgentHandoff {
  envFile: string;
  unitName: string;
  envText: string;
  unitText: string;
}

/** The settings given on the command line, as [flag, value] (booleans "true"), from argv as typed. */
export function givenSettings(argv: readonly string[], valueFlags: ReadonlySet<string>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z0-9-]+)(?:=([\s\S]*))?$/.exec(argv[i]);
    if (!m) continue;
    const [, name, inline] = m;
    if (valueFlags.has(name)) out.push([name, inline ?? argv[++i] ?? '']);
    else out.push([name.replace(/^no-/, ''), name.startsWith('no-') ? 'false' : (inline ?? 'true')]);
  }
  return out;
}

export function agentHandoff(settings: ReadonlyArray<readonly [string, string]>, instance: string): AgentHandoff {
  const unitName = `lifeboat-backup-${instance.replace(/[^A-Za-z0-9:_.-]/g, '_')}.service`;
  const envFile = `/etc/lifeboat/backup-${instance.replace(/[^A-Za-z0-9_.-]/g, '_')}.env`;
  const recipients = settings.filter(([k]) => k === 'encrypt-to').map(([, v]) => `--encrypt-to ${shellQuote(v)}`);
  const lines = [
    `# lifeboat backup run: its settings (${unitName}, EnvironmentFile=). Mode 0600: it may hold a password.`,
    ...settings.filter(([k]) => !NOT_HANDED_OVER.has(k)).map(([k, v]) => envLine(envName('LIFEBOAT', k), v)),
  ];
  if (settings.some(([k]) => k === 'user') && !settings.some(([k]) => k === 'password-file'))
    lines.push('# the password of LIFEBOAT_USER: LIFEBOAT_PASSWORD=... here, or LIFEBOAT_PASSWORD_FILE=/path (never on the command line)');
  const exec = [process.execPath, ...AGENT_NODE_FLAGS, path.join(packageRoot(), 'bin', 'run.js'), 'backup', 'run', ...recipients].join(' ');
  const unit = systemdUnit({
    description: `Lifeboat backup agent (${instance})`,
    envFile,
    exec,
    tail: [
      'Restart=always',
      'RestartSec=5',
      '# 3: refused (another agent holds the store, or the user lacks the root role). Restarting cannot help.',
      'RestartPreventExitStatus=2 3',
      '# SIGTERM: the agent commits its open segment, uploads what it can, releases the lock.',
      'TimeoutStopSec=30',
    ],
  });
  return { envFile, unitName, envText: `${lines.join('\n')}\n`, unitText: unit };
}
