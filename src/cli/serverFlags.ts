// `lifeboat server`'s flags as plain data (flagParser.ts parses them; a member runs
// without oclif: bin/run.js → serverEntry.ts). oclif prints `lifeboat server
// --help` from flags built out of this same table (commands/server.ts).
import { DEFAULT_MAX_REQUEST_BYTES, type RawServerFlags } from '../server/config.js';
import { DEFAULT_MAX_TXN_OPS } from '../api/requestCheck.js';
import { envName, parseFlags, type FlagSpec } from './flagParser.js';
import { LOG_LEVELS } from '../server/logger.js';
import { DEFAULT_PROGRESS_INTERVAL_MS } from '../server/watchHub.js';

const str = (description: string, def?: string): FlagSpec => ({ type: 'string', description, ...(def === undefined ? {} : { default: def }) });
const bool = (description: string): FlagSpec => ({ type: 'boolean', description, default: false });
const int = (description: string, def: number): FlagSpec => ({ type: 'integer', description, default: def });

const TABLE = {
  name: str('human-readable name for this member', 'default'),
  'data-dir': str('path to the data directory (default: <name>.etcd)'),
  'listen-peer-urls': str('URLs to listen on for peer traffic', 'http://localhost:2380'),
  'initial-advertise-peer-urls': str("this member's peer URLs to advertise to the rest of the cluster", 'http://localhost:2380'),
  'listen-client-urls': str('URLs to listen on for client traffic', 'http://localhost:2379'),
  'advertise-client-urls': str("this member's client URLs to advertise to the rest of the cluster", 'http://localhost:2379'),
  'listen-metrics-urls': str('URLs to serve Prometheus metrics (/metrics) and /health on'),
  'initial-cluster': str('initial cluster configuration: name=peerURL,... (default: <name>=<initial-advertise-peer-urls>)'),
  'initial-cluster-state': {
    type: 'string',
    description: 'new: bootstrap a new cluster; existing: join one (after member add)',
    default: 'new',
    options: ['new', 'existing'],
  },
  'initial-cluster-token': str('initial cluster token, for distinct member and cluster IDs', 'etcd-cluster'),
  discovery: str('discovery URL used to bootstrap the cluster (etcd v2 discovery; a first start only, instead of --initial-cluster)'),
  'discovery-fallback': {
    type: 'string',
    description: 'what a member past the discovery size does: exit (Lifeboat has no proxy mode)',
    default: 'exit',
    options: ['exit', 'proxy'],
  },
  'discovery-srv': str('DNS domain whose SRV records (_etcd-server-ssl._tcp, _etcd-server._tcp) give the initial cluster (a first start only)'),
  'discovery-srv-name': str('suffix of the SRV service names queried with --discovery-srv (_etcd-server-ssl-<name>._tcp ...)'),
  'discovery-proxy': str('HTTP proxy to use for traffic to the discovery service'),
  'discovery-timeout': {
    type: 'duration',
    description: 'how long a first start waits for the other members to register with --discovery',
    default: 5 * 60_000,
    defaultHelp: '5m',
  },
  'force-new-cluster': bool('start a new one-member cluster from this data dir (one-shot: recorded and refused the second time)'),
  'strict-reconfig-check': {
    type: 'boolean',
    description: 'refuse membership changes that could cause quorum loss (--no-strict-reconfig-check to disable)',
    default: true,
    allowNo: true,
  },
  'max-learners': int('maximum number of learners in the cluster', 1),
  'heartbeat-interval': int('time (in milliseconds) of a heartbeat interval', 100),
  'election-timeout': int('time (in milliseconds) for an election to timeout', 1000),
  'snapshot-count': int('number of committed entries that triggers a snapshot and log compaction', 10000),
  'quota-backend-bytes': int('raise a NOSPACE alarm when the backend exceeds this size (0: default 2 GiB)', 0),
  'max-txn-ops': int('maximum number of operations permitted in a transaction (in each of its compare, success and failure lists)', DEFAULT_MAX_TXN_OPS),
  'max-request-bytes': int(
    'maximum client request size in bytes the server will accept (a larger request is refused: etcdserver: request is too large)',
    DEFAULT_MAX_REQUEST_BYTES,
  ),
  'cert-file': str('path to the client server TLS cert file (for https:// client and metrics URLs; re-read when it changes)'),
  'key-file': str('path to the client server TLS key file'),
  'trusted-ca-file': str('path to the client server TLS trusted CA cert file (implies --client-cert-auth, as in etcd 3.4)'),
  'client-cert-auth': bool('refuse clients without a certificate signed by --trusted-ca-file'),
  'peer-cert-file': str('path to the peer server TLS cert file (also presented to the peers this member dials)'),
  'peer-key-file': str('path to the peer server TLS key file'),
  'peer-trusted-ca-file': str('path to the peer server TLS trusted CA file (implies --peer-client-cert-auth, as in etcd 3.4)'),
  'peer-client-cert-auth': bool('refuse peers without a certificate signed by --peer-trusted-ca-file'),
  'peer-cert-allowed-cn': str("allowed CN for inter-peer authentication: other peers' certificates must carry it"),
  'auth-token-ttl': int('time (in seconds) a simple auth token stays valid after its last use', 300),
  'log-level': { type: 'string', description: 'how much the member logs (JSON lines on stderr)', default: 'info', options: LOG_LEVELS },
  'experimental-watch-progress-notify-interval': {
    type: 'duration',
    description: "how often an idle watch that asked for progress notifications hears the store's revision",
    default: DEFAULT_PROGRESS_INTERVAL_MS,
    defaultHelp: '10m',
  },
} satisfies Record<string, FlagSpec>;

export type ServerFlags = RawServerFlags;

export const SERVER_FLAGS: Record<string, FlagSpec> = Object.fromEntries(
  Object.entries(TABLE).map(([name, spec]) => [name, { ...spec, env: [envName('LIFEBOAT', name)] }]),
);

/** Parses `lifeboat server`'s arguments (after `server`); it takes no positional argument. */
export function parseServerArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ServerFlags {
  return parseFlags(argv, SERVER_FLAGS, { commandId: 'server', env }).flags as unknown as ServerFlags;
}
