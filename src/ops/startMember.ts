// Starting a member on this host: the `lifeboat server` command line for it, and
// the process, detached, its output appended to a log file.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root, from src/ or dist/src/. */
function packageRoot(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return here.includes(`${path.sep}dist${path.sep}`) ? path.resolve(here, '../../..') : path.resolve(here, '../..');
}

export interface StartMemberOptions {
  name: string;
  dataDir: string;
  peerUrl: string;
  clientUrl: string;
  initialCluster: string;
  state: 'new' | 'existing';
  logFile: string;
  extraArgs?: string[];
}

/** The `lifeboat server` command line for a member (what a remote host should run). */
export function serverArgs(o: StartMemberOptions): string[] {
  return [
    'server',
    '--name',
    o.name,
    '--data-dir',
    o.dataDir,
    '--listen-peer-urls',
    o.peerUrl,
    '--initial-advertise-peer-urls',
    o.peerUrl,
    '--listen-client-urls',
    o.clientUrl,
    '--advertise-client-urls',
    o.clientUrl,
    '--initial-cluster',
    o.initialCluster,
    '--initial-cluster-state',
    o.state,
    ...(o.extraArgs ?? []),
  ];
}

/** Starts a member on this host, detached, its log appended to logFile; returns its pid. */
export function spawnMember(o: StartMemberOptions): number {
  fs.mkdirSync(path.dirname(o.logFile), { recursive: true });
  const log = fs.openSync(o.logFile, 'a');
  const child = spawn(process.execPath, [path.join(packageRoot(), 'bin', 'run.js'), ...serverArgs(o)], {
    detached: true,
    stdio: ['ignore', log, log],
  });
  child.unref();
  fs.closeSync(log);
  if (child.pid === undefined) throw new Error(`could not start member ${o.name}`);
  return child.pid;
}
