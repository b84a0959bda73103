// Starting a member on this host, for either runtime: the command line and the
// environment block it runs with (what a remote host is told to run), and the
// process, detached, its output appended to a log file, watched so a member that
// exits at once is noticed at once.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { lifeboatServerArgv, memberCommandLine, memberEnvironment, settingsArgs, type MemberSettings, type RuntimeName } from '../common/memberCommand.js';
import { etcdBinary } from './runtime.js';
import { registeredPeers } from '../server/discovery.js';
import { lifeboatPeerAmong } from '../server/discoveryPeers.js';

/** The package root, from src/ or dist/src/. */
export function packageRoot(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return here.includes(`${path.sep}dist${path.sep}`) ? path.resolve(here, '../../..') : path.resolve(here, '../..');
}

export interface StartMemberOptions {
  /** default lifeboat */
  runtime?: RuntimeName;
  name: string;
  dataDir: string;
  peerUrl: string;
  clientUrl: string;
  initialCluster: string;
  state: 'new' | 'existing';
  initialClusterToken?: string;
  /**
   * Bootstrap from a discovery service instead of initialCluster (a first start
   * only). Passed with --discovery-fallback exit: etcd 3.4's default, proxy,
   * would silently turn a member past the size into a proxy.
   */
  discovery?: { url: string; proxy?: string };
  logFile: string;
  /** the etcd binary (runtime etcd); default: etcd on PATH */
  etcdBin?: string;
  /** TLS for the member's client and peer URLs (https:// URLs), by etcd's flag names */
  tls?: MemberTls;
  extraArgs?: string[];
}

/** etcd's TLS flags, which `lifeboat server` shares; unset ones are not passed. */
export interface MemberTls {
  certFile?: string;
  keyFile?: string;
  trustedCaFile?: string;
  clientCertAuth?: boolean;
  peerCertFile?: string;
  peerKeyFile?: string;
  peerTrustedCaFile?: string;
  peerClientCertAuth?: boolean;
}

function tlsSettings(t: MemberTls | undefined): Array<readonly [string, string]> {
  if (!t) return [];
  const pairs: Array<[string, string | boolean | undefined]> = [
    ['cert-file', t.certFile],
    ['key-file', t.keyFile],
    ['trusted-ca-file', t.trustedCaFile],
    ['client-cert-auth', t.clientCertAuth],
    ['peer-cert-file', t.peerCertFile],
    ['peer-key-file', t.peerKeyFile],
    ['peer-trusted-ca-file', t.peerTrustedCaFile],
    ['peer-client-cert-auth', t.peerClientCertAuth],
  ];
  return pairs.filter(([, v]) => v !== undefined && v !== '' && v !== false).map(([k, v]) => [k, String(v)] as const);
}

function discoverySettings(d: { url: string; proxy?: string }): Array<readonly [string, string]> {
  return [['discovery', d.url], ['discovery-fallback', 'exit'], ...(d.proxy ? [['discovery-proxy', d.proxy] as const] : [])];
}

/** The member's settings, by etcd's flag names (which `lifeboat server` shares). */
export function memberSettings(o: StartMemberOptions): MemberSettings {
  return [
    ['name', o.name],
    ['data-dir', o.dataDir],
    ['listen-peer-urls', o.peerUrl],
    ['initial-advertise-peer-urls', o.peerUrl],
    ['listen-client-urls', o.clientUrl],
    ['advertise-client-urls', o.clientUrl],
    ...(o.discovery ? discoverySettings(o.discovery) : [['initial-cluster', o.initialCluster] as const]),
    ['initial-cluster-state', o.state],
    ...(o.initialClusterToken && !o.discovery ? [['initial-cluster-token', o.initialClusterToken] as const] : []),
    ...tlsSettings(o.tls),
  ];
}

/**
 * For an etcd member bootstrapping from a discovery URL: a Lifeboat member
 * registered on the token (one runtime per token), as the one-line refusal;
 * undefined when none answers, or when the token cannot be read (etcd then
 * says why itself).
 */
export async function lifeboatOnToken(o: StartMemberOptions): Promise<string | undefined> {
  if ((o.runtime ?? 'lifeboat') !== 'etcd' || !o.discovery) return undefined;
  let peers: Map<string, string[]>;
  try {
    peers = await registeredPeers({ url: o.discovery.url, proxy: o.discovery.proxy, timeoutMs: 0 }); // a look: no wait
  } catch {
    return undefined;
  }
  const others = new Map([...peers].filter(([, urls]) => !urls.includes(o.peerUrl)));
  const lb = await lifeboatPeerAmong(others, { certFile: o.tls?.peerCertFile, keyFile: o.tls?.peerKeyFile, trustedCaFile: o.tls?.peerTrustedCaFile });
  if (!lb) return undefined;
  return `discovery: registered member ${lb.name} (${lb.url}) is a Lifeboat member; Lifeboat and etcd members cannot form one cluster: bootstrap each runtime with its own discovery token`;
}

/** What another host must run: the command line and the same settings as an environment block. */
export function startInstructions(o: StartMemberOptions): { command: string; env: Array<[string, string]> } {
  const runtime = o.runtime ?? 'lifeboat';
  return { command: memberCommandLine(runtime, memberSettings(o)), env: memberEnvironment(runtime, memberSettings(o)) };
}

export interface StartedMember {
  pid: number;
  /** resolves with the exit code (or the signal) if the process ends while we watch */
  exited: Promise<string>;
}

/** Starts a member on this host, detached, its log appended to logFile. */
export function spawnMember(o: StartMemberOptions): StartedMember {
  const args = [...settingsArgs(memberSettings(o)), ...(o.extraArgs ?? [])];
  const [bin, argv] =
    (o.runtime ?? 'lifeboat') === 'etcd'
      ? [etcdBinary(o.etcdBin), args]
      : [process.execPath, lifeboatServerArgv(path.join(packageRoot(), 'bin', 'run.js'), args)];
  fs.mkdirSync(path.dirname(o.logFile), { recursive: true });
  const log = fs.openSync(o.logFile, 'a');
  try {
    const child = spawn(bin, argv, { detached: true, stdio: ['ignore', log, log] });
    const exited = new Promise<string>((resolve) => {
      child.once('exit', (code, signal) => resolve(signal ? `killed by ${signal}` : `exit ${code}`));
      child.once('error', (e) => resolve(`could not start: ${e.message}`));
    });
    child.unref();
    if (child.pid === undefined) throw new Error(`could not start member ${o.name} (${bin})`);
    return { pid: child.pid, exited };
  } finally {
    fs.closeSync(log);
  }
}

/** The last lines of a member's log, to say why it stopped. */
export function logTail(file: string, lines = 5): string {
  try {
    const text = fs.readFileSync(file, 'utf8').trimEnd();
    return text.split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
