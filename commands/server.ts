import { Command, Flags } from '#oclif-core';
import { EXIT } from '../src/cli/exitCodes.js';
import { buildServerConfig, ConfigError } from '../src/server/config.js';
import { createLogger } from '../src/server/logger.js';
import { DataDirLockedError } from '../src/storage/errors.js';
import { MemberExit } from '../src/server/member.js';
import { startMember } from '../src/server/startup.js';
import { silenceTlsServerNameWarning } from '../src/cli/warnings.js';

const env = (flag: string) => `LIFEBOAT_${flag.toUpperCase().replace(/-/g, '_')}`;
const str = (flag: string, description: string, def?: string) => Flags.string({ description, env: env(flag), ...(def === undefined ? {} : { default: def }) });
const bool = (flag: string, description: string) => Flags.boolean({ description, env: env(flag), default: false });
const int = (flag: string, description: string, def: number) => Flags.integer({ description, env: env(flag), default: def });

/**
 * etcd's command lines write booleans as `--client-cert-auth=true` (Go flags);
 * oclif takes `--client-cert-auth` or `--no-...` only: translate.
 */
function etcdBooleans(argv: string[], flags: Record<string, { type: string; allowNo?: boolean }>): string[] {
  return argv.flatMap((arg) => {
    const m = /^--([a-z-]+)=(true|false|1|0)$/.exec(arg);
    const flag = m && flags[m[1]];
    if (!m || !flag || flag.type !== 'boolean') return [arg];
    if (m[2] === 'true' || m[2] === '1') return [`--${m[1]}`];
    return flag.allowNo ? [`--no-${m[1]}`] : [];
  });
}

export default class Server extends Command {
  static override description = `Run one Lifeboat member in the foreground: an embedded Raft member with an MVCC store, serving etcd's v3 API.

Flags follow etcd's names; each can also come from LIFEBOAT_<FLAG> (e.g. LIFEBOAT_INITIAL_CLUSTER), the flag winning.
Exit codes: 0 clean stop, 1 failure, 2 bad usage, 3 refused by a safety check, 78 removed or superseded (do not restart).`;

  static override examples = [
    '<%= config.bin %> server --name m1 --data-dir /var/lib/lifeboat/m1 --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 --initial-cluster m1=http://127.0.0.1:2380',
    'LIFEBOAT_NAME=m4 LIFEBOAT_INITIAL_CLUSTER_STATE=existing LIFEBOAT_INITIAL_CLUSTER=m1=http://127.0.0.1:2380,m4=http://127.0.0.1:2480 <%= config.bin %> server --data-dir /var/lib/lifeboat/m4 --listen-peer-urls http://127.0.0.1:2480 --initial-advertise-peer-urls http://127.0.0.1:2480 --listen-client-urls http://127.0.0.1:2479 --advertise-client-urls http://127.0.0.1:2479',
    '<%= config.bin %> server --name m1 --data-dir /var/lib/lifeboat/m1 --listen-client-urls https://10.0.0.1:2379 --advertise-client-urls https://10.0.0.1:2379 --cert-file m1.crt --key-file m1.key --trusted-ca-file ca.crt --client-cert-auth --listen-peer-urls https://10.0.0.1:2380 --initial-advertise-peer-urls https://10.0.0.1:2380 --peer-cert-file m1.crt --peer-key-file m1.key --peer-trusted-ca-file ca.crt --peer-client-cert-auth --initial-cluster m1=https://10.0.0.1:2380',
  ];

  static override flags = {
    name: str('name', 'human-readable name for this member', 'default'),
    'data-dir': str('data-dir', 'path to the data directory (default: <name>.etcd)'),
    'listen-peer-urls': str('listen-peer-urls', 'URLs to listen on for peer traffic', 'http://localhost:2380'),
    'initial-advertise-peer-urls': str(
      'initial-advertise-peer-urls',
      "this member's peer URLs to advertise to the rest of the cluster",
      'http://localhost:2380',
    ),
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

  async run(): Promise<void> {
    const { flags } = await this.parse(Server, etcdBooleans(this.argv, Server.flags));
    // Logs are JSON lines: no Node warning about https://<IP> peer URLs in between.
    silenceTlsServerNameWarning();
    let cfg;
    try {
      cfg = buildServerConfig({ ...flags, 'quota-backend-bytes': flags['quota-backend-bytes'] || 2 * 1024 ** 3 } as Parameters<typeof buildServerConfig>[0]);
    } catch (e) {
      if (e instanceof ConfigError) this.error(e.message, { exit: EXIT.USAGE });
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
      this.error((e as Error).message, { exit: code });
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
    this.exit(code);
  }
}
