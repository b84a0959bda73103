// `lifeboat server`: its flags and its run, shared by the oclif command
// (commands/server.ts: --help) and the lean entry (serverEntry.ts), which every
// `lifeboat server` goes through without loading oclif and the other commands.
// Only oclif's flag builders and parser are imported here, not @oclif/core's
// index: one way of parsing, at a member's idle cost of a few hundred KiB.
import * as Flags from '@oclif/core/flags';
import { EXIT } from './exitCodes.js';
import { buildServerConfig, ConfigError } from '../server/config.js';
import { createLogger } from '../server/logger.js';
import { DataDirLockedError } from '../storage/errors.js';
import { MemberExit } from '../server/member.js';
import { startMember } from '../server/startup.js';
import { silenceTlsServerNameWarning } from './warnings.js';

const env = (flag: string) => `LIFEBOAT_${flag.toUpperCase().replace(/-/g, '_')}`;
const str = (flag: string, description: string, def?: string) => Flags.string({ description, env: env(flag), ...(def === undefined ? {} : { default: def }) });
const bool = (flag: string, description: string) => Flags.boolean({ description, env: env(flag), default: false });
const int = (flag: string, description: string, def: number) => Flags.integer({ description, env: env(flag), default: def });

export const serverFlags = {
  name: str('name', 'human-readable name for this member', 'default'),
  'data-dir': str('data-dir', 'path to the data directory (default: <name>.etcd)'),
  'listen-peer-urls': str('listen-peer-urls', 'URLs to listen on for peer traffic', 'http://localhost:2380'),
  'initial-advertise-peer-urls': str('initial-advertise-peer-urls', "this member's peer URLs to advertise to the rest of the cluster", 'http://localhost:2380'),
  'listen-client-urls': str('listen-client-urls', 'URLs to listen on for client traffic', 'http://localhost:2379'),
  'advertise-client-urls': str('advertise-client-urls', "this member's client URLs to advertise to the rest of the cluster", 'http://localhost:2379'),
  'listen-metrics-urls': str('listen-metrics-urls', 'URLs to serve Prometheus metrics (/metrics) and /health on'),
  'initial-cluster': str('initial-cluster', 'initial cluster configuration: name=peerURL,... (default: <name>=<initial-advertise-peer-urls>)'),
  'initial-cluster-state': Flags.string({
    description: 'new: bootstrap a new cluster; existing: join one (after member add)',
    env: env('initial-cluster-state'),
    default: 'new',
    options: ['new', 'existing'],
  }),
  'initial-cluster-token': str('initial-cluster-token', 'initial cluster token, for distinct member and cluster IDs', 'etcd-cluster'),
  'force-new-cluster': Flags.boolean({
    description: 'start a new one-member cluster from this data dir (one-shot: recorded and refused the second time)',
    env: env('force-new-cluster'),
    default: false,
  }),
  'strict-reconfig-check': Flags.boolean({
    description: 'refuse membership changes that could cause quorum loss (--no-strict-reconfig-check to disable)',
    env: env('strict-reconfig-check'),
    default: true,
    allowNo: true,
  }),
  'max-learners': int('max-learners', 'maximum number of learners in the cluster', 1),
  'heartbeat-interval': int('heartbeat-interval', 'time (in milliseconds) of a heartbeat interval', 100),
  'election-timeout': int('election-timeout', 'time (in milliseconds) for an election to timeout', 1000),
  'snapshot-count': int('snapshot-count', 'number of committed entries that triggers a snapshot and log compaction', 10000),
  'quota-backend-bytes': int('quota-backend-bytes', 'raise a NOSPACE alarm when the backend exceeds this size (0: default 2 GiB)', 0),
  'cert-file': str('cert-file', 'path to the client server TLS cert file (for https:// client and metrics URLs; re-read when it changes)'),
  'key-file': str('key-file', 'path to the client server TLS key file'),
  'trusted-ca-file': str('trusted-ca-file', 'path to the client server TLS trusted CA cert file (implies --client-cert-auth, as in etcd 3.4)'),
  'client-cert-auth': bool('client-cert-auth', 'refuse clients without a certificate signed by --trusted-ca-file'),
  'peer-cert-file': str('peer-cert-file', 'path to the peer server TLS cert file (also presented to the peers this member dials)'),
  'peer-key-file': str('peer-key-file', 'path to the peer server TLS key file'),
  'peer-trusted-ca-file': str('peer-trusted-ca-file', 'path to the peer server TLS trusted CA file (implies --peer-client-cert-auth, as in etcd 3.4)'),
  'peer-client-cert-auth': bool('peer-client-cert-auth', 'refuse peers without a certificate signed by --peer-trusted-ca-file'),
  'peer-cert-allowed-cn': str('peer-cert-allowed-cn', "allowed CN for inter-peer authentication: other peers' certificates must carry it"),
  'auth-token-ttl': int('auth-token-ttl', 'time (in seconds) a simple auth token stays valid after its last use', 300),
};

/**
 * etcd's command lines write booleans as `--client-cert-auth=true` (Go flags);
 * oclif takes `--client-cert-auth` or `--no-...` only: translate.
 */
export function etcdBooleans(argv: string[], flags: Record<string, { type: string; allowNo?: boolean }> = serverFlags): string[] {
  return argv.flatMap((arg) => {
    const m = /^--([a-z-]+)=(true|false|1|0)$/.exec(arg);
    const flag = m && flags[m[1]];
    if (!m || !flag || flag.type !== 'boolean') return [arg];
    if (m[2] === 'true' || m[2] === '1') return [`--${m[1]}`];
    return flag.allowNo ? [`--no-${m[1]}`] : [];
  });
}

export type ServerFlags = Parameters<typeof buildServerConfig>[0];

/** An error that ends `lifeboat server` with `code` (the shape exitFor reads, as oclif's this.error makes it). */
const exitWith = (message: string, code: number) => Object.assign(new Error(message), { oclif: { exit: code } });

/**
 * Runs one member in the foreground until a signal (0) or its own exit (its
 * code); resolves to the exit code. A member that does not start throws with
 * the code it ends with: 2 bad flags, 3 refused (data dir locked), else its own.
 */
export async function runServer(flags: ServerFlags): Promise<number> {
  // Logs are JSON lines: no Node warning about https://<IP> peer URLs in between.
  silenceTlsServerNameWarning();
  let cfg;
  try {
    cfg = buildServerConfig({ ...flags, 'quota-backend-bytes': flags['quota-backend-bytes'] || 2 * 1024 ** 3 });
  } catch (e) {
    if (e instanceof ConfigError) throw exitWith(e.message, EXIT.USAGE);
    throw e;
  }
  const log = createLogger({ name: cfg.name });
  let member;
  try {
    member = await startMember(cfg, log);
    await member.start();
  } catch (e) {
    // A data dir locked by a running member is a refusal (3), as for every command.
    const code = e instanceof MemberExit ? e.code : e instanceof DataDirLockedError ? EXIT.REFUSED : EXIT.FAILURE;
    log.error({ error: (e as Error).message }, 'member did not start');
    if (member) await member.stop().catch(() => undefined);
    throw exitWith((e as Error).message, code);
  }
  const running = member;
  const code = await new Promise<number>((resolve) => {
    const onSignal = (sig: string) => {
      log.info({ signal: sig }, 'received signal, stopping');
      resolve(EXIT.OK);
    };
    process.once('SIGTERM', () => onSignal('SIGTERM'));
    process.once('SIGINT', () => onSignal('SIGINT'));
    // exited() only ever resolves
    void running.exited().then((e) => resolve(e.code));
  });
  await running.stop();
  log.info({ code }, 'stopped');
  return code;
}
