// A `systemctl` stand-in for tests of Debian's packaged etcd, put first on PATH
// as `systemctl` (see debianEtcdHosts.ts): `systemctl start|stop|is-active UNIT`
// for the unit files in $SYSTEMCTL_STANDIN_DIR/units, as systemd would run them:
// Environment= lines, then EnvironmentFile= (a leading "-": optional; %p the
// unit's name, %H the host's), which overrides them, then ExecStart with its
// $VARIABLES expanded. The daemon runs detached, its output appended to
// $SYSTEMCTL_STANDIN_DIR/state/UNIT.log and its pid in UNIT.pid; stop sends
// SIGTERM and waits (SIGKILL after 10 s). Every call is appended to calls.log.
// Type=notify is not waited for: start returns once the process has lived 300 ms.
import { spawn } from 'node:child_process';
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readEnvFile } from './envFile.js';

const root = process.env.SYSTEMCTL_STANDIN_DIR ?? '';
const [action, unitArg] = process.argv.slice(2);
const fail = (why: string): never => {
  process.stderr.write(`${why}\n`);
  process.exit(1);
};
if (!root) fail('SYSTEMCTL_STANDIN_DIR is not set');
const unit = unitArg?.endsWith('.service') ? unitArg : `${unitArg}.service`;
const prefix = unit.slice(0, -'.service'.length);
const state = path.join(root, 'state');
mkdirSync(state, { recursive: true });
appendFileSync(path.join(root, 'calls.log'), `${action} ${unit}\n`);
const pidFile = path.join(state, `${prefix}.pid`);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const running = (): number | undefined => {
  const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : NaN;
  return Number.isInteger(pid) && alive(pid) ? pid : undefined;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function start(): Promise<void> {
  if (running()) return;
  const file = path.join(root, 'units', unit);
  if (!existsSync(file)) fail(`Failed to start ${unit}: Unit ${unit} not found.`);
  const spec = (s: string) => s.replace(/%p/g, prefix).replace(/%H/g, os.hostname());
  const env: Record<string, string> = {};
  const envFiles: string[] = [];
  let exec = '';
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^(Environment|EnvironmentFile|ExecStart)=(.*)$/.exec(line.trim());
    if (!m) continue;
    if (m[1] === 'Environment') {
      const kv = /^"?([A-Za-z_][A-Za-z0-9_]*)=(.*?)"?$/.exec(m[2]);
      if (kv) env[kv[1]] = spec(kv[2]);
    } else if (m[1] === 'EnvironmentFile') envFiles.push(spec(m[2]));
    else exec = m[2];
  }
  for (const f of envFiles) {
    const optional = f.startsWith('-');
    const p = optional ? f.slice(1) : f;
    if (!existsSync(p)) {
      if (!optional) fail(`Failed to start ${unit}: ${p} not found`);
      continue;
    }
    Object.assign(env, readEnvFile(p));
  }
  const argv = exec
    .split(/\s+/)
    .filter(Boolean)
    .flatMap((w) => (w.startsWith('$') ? (env[w.slice(1)] ?? '').split(/\s+/).filter(Boolean) : [w]));
  // /usr/bin/etcd: whichever etcd is on PATH.
  if (argv[0] === '/usr/bin/etcd') argv[0] = 'etcd';
  const base: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('ETCD')) base[k] = v;
  const fd = openSync(path.join(state, `${prefix}.log`), 'a');
  const child = spawn(argv[0], argv.slice(1), { env: { ...base, ...env }, stdio: ['ignore', fd, fd], detached: true });
  closeSync(fd);
  if (child.pid === undefined) fail(`Failed to start ${unit}: cannot run ${argv[0]}`);
  writeFileSync(pidFile, String(child.pid));
  child.unref();
  await sleep(300);
  if (!alive(child.pid!)) fail(`Job for ${unit} failed because the control process exited with error code. See ${path.join(state, `${prefix}.log`)}`);
}

async function stop(): Promise<void> {
  const pid = running();
  if (pid) {
    process.kill(pid, 'SIGTERM');
    for (let i = 0; i < 100 && alive(pid); i++) await sleep(100);
    if (alive(pid)) process.kill(pid, 'SIGKILL');
    for (let i = 0; i < 50 && alive(pid); i++) await sleep(100);
  }
  rmSync(pidFile, { force: true });
}

if (action === 'start') await start();
else if (action === 'stop') await stop();
else if (action === 'is-active') {
  process.stdout.write(running() ? 'active\n' : 'inactive\n');
  process.exit(running() ? 0 : 3);
} else fail(`systemctl stand-in: unknown command ${action}`);
