// Handing members a run started over to the host's supervisor: the members a
// playbook starts are processes of the CLI, and after a reboot only the
// operator's units start members — the old ones would start the old, superseded
// data dirs. Per member: an environment file next to its data dir (LIFEBOAT_* or
// ETCD_*, the same settings it was started with), the systemd unit that uses it
// (docs/operations/running-a-member.md "systemd", filled in; for etcd a unit running etcd), and the service
// user's ownership with modes 0700 (data dir) and 0600 (env file). Files are
// written to a temp name, then renamed.
import fs from 'node:fs';
import path from 'node:path';
import { InputError } from '../common/errors.js';
import { lifeboatServerArgv, memberEnvironment, type MemberSettings, type RuntimeName } from '../common/memberCommand.js';
import { etcdBinary } from './runtime.js';
import { packageRoot } from './startMember.js';

export const SUPERVISOR_MODES = ['none', 'print', 'systemd'] as const;
export type SupervisorMode = (typeof SUPERVISOR_MODES)[number];

export interface ServiceUser {
  name: string;
  uid: number;
  gid: number;
}

/** A user of this host, from /etc/passwd (unknown: one line, exit 2). */
export function lookupServiceUser(name: string, passwd = '/etc/passwd'): ServiceUser {
  let text = '';
  try {
    text = fs.readFileSync(passwd, 'utf8');
  } catch (e) {
    throw new InputError(`--service-user ${name}: cannot read ${passwd} (${(e as Error).message})`);
  }
  for (const line of text.split('\n')) {
    const f = line.split(':');
    if (f[0] === name && f.length >= 4) return { name, uid: Number(f[2]), gid: Number(f[3]) };
  }
  throw new InputError(`--service-user ${name}: no such user on this host; create it first (Debian's etcd package runs etcd as user etcd)`);
}

/** The environment file of a member: next to its data dir, `<data dir>.env`. */
export function envFileOf(dataDir: string): string {
  return `${dataDir.replace(/\/+$/, '')}.env`;
}

export function unitNameOf(runtime: RuntimeName, name: string): string {
  return `${runtime === 'etcd' ? 'etcd' : 'lifeboat'}-${name.replace(/[^A-Za-z0-9:_.-]/g, '_')}.service`;
}

/** systemd's EnvironmentFile syntax: a value quoted when it needs to be. */
export function envLine(key: string, value: string): string {
  return /^[A-Za-z0-9_\-.,:/=@+%]*$/.test(value) ? `${key}=${value}` : `${key}="${value.replace(/(["\\$`])/g, '\\$1')}"`;
}

export function envFileText(runtime: RuntimeName, settings: MemberSettings, header: string[]): string {
  return [...header.map((l) => `# ${l}`), ...memberEnvironment(runtime, settings).map(([k, v]) => envLine(k, v)), ''].join('\n');
}

export interface UnitInput {
  runtime: RuntimeName;
  name: string;
  envFile: string;
  /** the etcd binary (runtime etcd) */
  etcdBin?: string;
  user?: ServiceUser;
}

/**
 * A systemd unit started at boot that runs `exec` with the settings of
 * `envFile`; `head` goes before them in [Service], `tail` after (restart policy,
 * stop timeout). The members' units and the backup agent's share it.
 */
export function systemdUnit(u: { description: string; envFile: string; exec: string; head?: string[]; tail: string[] }): string {
  return [
    '[Unit]',
    `Description=${u.description}`,
    'After=network-online.target',
    'Wants=network-online.target',
    '',
    '[Service]',
    ...(u.head ?? []),
    `EnvironmentFile=${u.envFile}`,
    `ExecStart=${u.exec}`,
    ...u.tail,
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
}

/** The unit that starts the member from its environment file. */
export function unitText(u: UnitInput): string {
  const exec =
    u.runtime === 'etcd' ? etcdExecutable(u.etcdBin) : [process.execPath, ...lifeboatServerArgv(path.join(packageRoot(), 'bin', 'run.js'), [])].join(' ');
  return systemdUnit({
    description: u.runtime === 'etcd' ? `etcd member ${u.name}` : `Lifeboat member ${u.name}`,
    envFile: u.envFile,
    exec,
    head: [...(u.runtime === 'etcd' ? ['Type=notify'] : []), ...(u.user ? [`User=${u.user.name}`] : [])],
    tail: [
      'Restart=on-failure',
      ...(u.runtime === 'etcd'
        ? ['LimitNOFILE=65536']
        : ['# 78: removed from the cluster or superseded by a recovery. Restarting cannot help.', 'RestartPreventExitStatus=78']),
      'TimeoutStopSec=30',
    ],
  });
}

function etcdExecutable(given?: string): string {
  try {
    return path.resolve(etcdBinary(given));
  } catch {
    return given || '/usr/bin/etcd';
  }
}

/** Writes `file` through `file.tmp` and a rename, with `mode` and, given a user, its ownership. */
export function writeFileAtomic(file: string, text: string, mode: number, user?: ServiceUser): void {
  const tmp = `${file}.tmp`;
  try {
    fs.writeFileSync(tmp, text, { mode });
    fs.chmodSync(tmp, mode);
    if (user) fs.chownSync(tmp, user.uid, user.gid);
    const fd = fs.openSync(tmp, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
}

/** The data dir: mode 0700 and, given a user, owned by it (every file in it). Bounded by the tree's size. */
export function handOverDataDir(dataDir: string, user?: ServiceUser): void {
  fs.chmodSync(dataDir, 0o700);
  if (!user) return;
  const walk = (p: string): void => {
    fs.lchownSync(p, user.uid, user.gid);
    const st = fs.lstatSync(p);
    if (st.isDirectory()) for (const e of fs.readdirSync(p)) walk(path.join(p, e));
  };
  walk(dataDir);
}
