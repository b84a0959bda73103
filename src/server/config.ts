// A member's configuration, from etcd's flag names, validated as a whole before
// anything is written. Every problem is one line naming the flag and the fix.
import { isValidMemberUrl } from '../common/urls.js';
import { CLIENT_TLS_FLAGS, loadTlsFiles, PEER_TLS_FLAGS, TlsFilesError } from '../net/tlsFiles.js';
import { DEFAULT_MAX_TXN_OPS } from '../api/requestCheck.js';

/** One side's TLS settings (etcd's --cert-file ... or --peer-cert-file ...). */
export interface MemberTlsConfig {
  certFile?: string;
  keyFile?: string;
  trustedCaFile?: string;
  /**
   * Request a certificate from whoever connects and refuse one that the trusted
   * CA did not sign: --client-cert-auth / --peer-client-cert-auth, or a trusted
   * CA file alone (in etcd 3.4 it implies the check).
   */
  clientCertAuth: boolean;
  /** --peer-cert-allowed-cn: the only CN a peer's certificate may carry (peer side only). */
  allowedCn?: string;
  /** The name a dialled peer's certificate must carry instead of the URL's host (peer side only: the --discovery-srv domain, see startup.ts). */
  serverName?: string;
}

/** --discovery and its companions. */
export interface DiscoveryOptions {
  url: string;
  /** --discovery-proxy */
  proxy?: string;
  /** How long a first start waits for the other members to register. */
  timeoutMs: number;
}

export interface ServerConfig {
  name: string;
  dataDir: string;
  listenPeerUrls: string[];
  initialAdvertisePeerUrls: string[];
  listenClientUrls: string[];
  advertiseClientUrls: string[];
  listenMetricsUrls: string[];
  /** name → peer URLs, in the order given. */
  initialCluster: Map<string, string[]>;
  initialClusterState: 'new' | 'existing';
  initialClusterToken: string;
  /** --discovery: bootstrap from a v2 discovery service (a first start only). */
  discovery?: DiscoveryOptions;
  /** --discovery-srv and --discovery-srv-name: the initial cluster from DNS SRV records (a first start only). */
  discoverySrv?: { domain: string; serviceName?: string };
  forceNewCluster: boolean;
  strictReconfigCheck: boolean;
  maxLearners: number;
  heartbeatMs: number;
  electionMs: number;
  snapshotCount: number;
  quotaBackendBytes: number;
  /** etcd's --max-txn-ops: the most operations a Txn may hold in one branch. */
  maxTxnOps: number;
  /** etcd's --max-request-bytes: the largest request (its Raft entry) proposed; gRPC takes messages up to this plus GRPC_OVERHEAD_BYTES. */
  maxRequestBytes: number;
  /** Seconds a simple token stays valid after its last use (etcd's --auth-token-ttl). */
  authTokenTtlSec: number;
  /** Watch progress notifications (etcd's --experimental-watch-progress-notify-interval); undefined: etcd's default. */
  watchProgressNotifyMs?: number;
  /** https:// client and metrics URLs. */
  clientTls: MemberTlsConfig;
  /** https:// peer URLs, both ends (the certificate is also presented to peers we dial). */
  peerTls: MemberTlsConfig;
}

/** --max-request-bytes default: the 2 MiB the member's gRPC limit has always been built from (etcd's default is 1.5 MiB). */
export const DEFAULT_MAX_REQUEST_BYTES = 2 * 1024 * 1024;
/** What gRPC takes beyond --max-request-bytes (etcd's grpcOverheadBytes): larger messages are refused before they are read. */
export const GRPC_OVERHEAD_BYTES = 512 * 1024;
/** The largest --max-request-bytes: an entry must fit in one message between members (64 MiB, src/transport). */
const MAX_MAX_REQUEST_BYTES = 32 * 1024 * 1024;

/** The largest gRPC message a member's client API reads, as etcd sizes it. */
export function maxReceiveBytes(maxRequestBytes: number): number {
  return maxRequestBytes + GRPC_OVERHEAD_BYTES;
}

export interface RawServerFlags {
  name: string;
  'data-dir'?: string;
  'listen-peer-urls': string;
  'initial-advertise-peer-urls': string;
  'listen-client-urls': string;
  'advertise-client-urls': string;
  'listen-metrics-urls'?: string;
  'initial-cluster'?: string;
  'initial-cluster-state': string;
  'initial-cluster-token': string;
  discovery?: string;
  'discovery-fallback'?: string;
  'discovery-proxy'?: string;
  'discovery-srv'?: string;
  'discovery-srv-name'?: string;
  'discovery-timeout'?: number;
  'force-new-cluster': boolean;
  'strict-reconfig-check': boolean;
  'max-learners': number;
  'heartbeat-interval': number;
  'election-timeout': number;
  'snapshot-count': number;
  'quota-backend-bytes': number;
  'max-txn-ops': number;
  'max-request-bytes': number;
  'cert-file'?: string;
  'key-file'?: string;
  'trusted-ca-file'?: string;
  'client-cert-auth'?: boolean;
  'peer-cert-file'?: string;
  'peer-key-file'?: string;
  'peer-trusted-ca-file'?: string;
  'peer-client-cert-auth'?: boolean;
  'peer-cert-allowed-cn'?: string;
  'auth-token-ttl'?: number;
  'experimental-watch-progress-notify-interval'?: number;
  'log-level'?: string;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

function urlList(flag: string, value: string | undefined): string[] {
  if (!value) return [];
  const urls = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const u of urls) {
    if (!isValidMemberUrl(u)) throw new ConfigError(`--${flag}: "${u}" is not a valid URL; use scheme://host:port, e.g. http://127.0.0.1:2380`);
  }
  return urls;
}

/** "a=http://h:1,a=http://h:2,b=http://g:1" → {a: [..], b: [..]} */
export function parseInitialCluster(value: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const part of value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = part.indexOf('=');
    if (eq <= 0) throw new ConfigError(`--initial-cluster: "${part}" is not name=URL; e.g. m1=http://127.0.0.1:2380,m2=http://127.0.0.1:2381`);
    const name = part.slice(0, eq);
    const url = part.slice(eq + 1);
    if (!isValidMemberUrl(url)) throw new ConfigError(`--initial-cluster: "${url}" for ${name} is not a valid URL; use scheme://host:port`);
    out.set(name, [...(out.get(name) ?? []), url]);
  }
  return out;
}

const CONFLICT = 'multiple discovery or bootstrap flags are set. Choose one of "initial-cluster", "discovery" or "discovery-srv"';

function httpUrl(flag: string, value: string): string {
  let u: URL | undefined;
  try {
    u = new URL(value);
  } catch {
    // reported below
  }
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:')) throw new ConfigError(`--${flag}: "${value}" is not an http:// or https:// URL`);
  return value;
}

/** The --discovery flags, checked as etcd checks them; undefined without --discovery. */
function discoveryOf(f: RawServerFlags): DiscoveryOptions | undefined {
  if (f['discovery-fallback'] === 'proxy' && f.discovery) {
    throw new ConfigError('--discovery-fallback proxy: Lifeboat has no proxy mode; use --discovery-fallback exit (a member past the discovery size exits)');
  }
  if (!f.discovery) return undefined;
  if (f['initial-cluster'] || f['discovery-srv']) throw new ConfigError(CONFLICT);
  if (f['initial-cluster-state'] === 'existing') {
    throw new ConfigError('--discovery bootstraps a new cluster only; a member joins an existing one after `member add`, with the --initial-cluster it prints');
  }
  return {
    url: httpUrl('discovery', f.discovery),
    proxy: f['discovery-proxy'] ? httpUrl('discovery-proxy', f['discovery-proxy']) : undefined,
    timeoutMs: f['discovery-timeout'] ?? 5 * 60_000,
  };
}

function discoverySrvOf(f: RawServerFlags): ServerConfig['discoverySrv'] {
  const domain = f['discovery-srv'];
  if (!domain) return undefined;
  if (f['initial-cluster']) throw new ConfigError(CONFLICT);
  if (f['initial-cluster-state'] === 'existing') {
    throw new ConfigError(
      '--discovery-srv bootstraps a new cluster only; a member joins an existing one after `member add`, with the --initial-cluster it prints',
    );
  }
  return { domain, ...(f['discovery-srv-name'] ? { serviceName: f['discovery-srv-name'] } : {}) };
}

export function buildServerConfig(f: RawServerFlags): ServerConfig {
  if (!/^[A-Za-z0-9._-]+$/.test(f.name)) throw new ConfigError(`--name: "${f.name}" may only hold letters, digits, '.', '_' and '-'`);
  const state = f['initial-cluster-state'];
  if (state !== 'new' && state !== 'existing') throw new ConfigError(`--initial-cluster-state: "${state}" must be new or existing`);
  const advertisePeer = urlList('initial-advertise-peer-urls', f['initial-advertise-peer-urls']);
  const cfg: ServerConfig = {
    name: f.name,
    dataDir: f['data-dir'] || `${f.name}.etcd`,
    listenPeerUrls: urlList('listen-peer-urls', f['listen-peer-urls']),
    initialAdvertisePeerUrls: advertisePeer,
    listenClientUrls: urlList('listen-client-urls', f['listen-client-urls']),
    advertiseClientUrls: urlList('advertise-client-urls', f['advertise-client-urls']),
    listenMetricsUrls: urlList('listen-metrics-urls', f['listen-metrics-urls']),
    initialCluster: parseInitialCluster(f['initial-cluster'] || `${f.name}=${advertisePeer.join(`,${f.name}=`)}`),
    initialClusterState: state,
    initialClusterToken: f['initial-cluster-token'],
    discovery: discoveryOf(f),
    discoverySrv: discoverySrvOf(f),
    forceNewCluster: f['force-new-cluster'],
    strictReconfigCheck: f['strict-reconfig-check'],
    maxLearners: f['max-learners'],
    heartbeatMs: f['heartbeat-interval'],
    electionMs: f['election-timeout'],
    snapshotCount: f['snapshot-count'],
    quotaBackendBytes: f['quota-backend-bytes'],
    maxTxnOps: f['max-txn-ops'] ?? DEFAULT_MAX_TXN_OPS,
    maxRequestBytes: f['max-request-bytes'] ?? DEFAULT_MAX_REQUEST_BYTES,
    authTokenTtlSec: f['auth-token-ttl'] ?? 300,
    watchProgressNotifyMs: f['experimental-watch-progress-notify-interval'],
    clientTls: {
      certFile: f['cert-file'] || undefined,
      keyFile: f['key-file'] || undefined,
      trustedCaFile: f['trusted-ca-file'] || undefined,
      clientCertAuth: !!f['client-cert-auth'] || !!f['trusted-ca-file'],
    },
    peerTls: {
      certFile: f['peer-cert-file'] || undefined,
      keyFile: f['peer-key-file'] || undefined,
      trustedCaFile: f['peer-trusted-ca-file'] || undefined,
      clientCertAuth: !!f['peer-client-cert-auth'] || !!f['peer-trusted-ca-file'],
      allowedCn: f['peer-cert-allowed-cn'] || undefined,
    },
  };
  if (cfg.listenPeerUrls.length === 0) throw new ConfigError('--listen-peer-urls is empty; give at least one URL');
  if (cfg.listenClientUrls.length === 0) throw new ConfigError('--listen-client-urls is empty; give at least one URL');
  if (cfg.initialAdvertisePeerUrls.length === 0) throw new ConfigError('--initial-advertise-peer-urls is empty; give at least one URL');
  if (cfg.heartbeatMs < 1) throw new ConfigError(`--heartbeat-interval ${cfg.heartbeatMs} must be at least 1 (ms)`);
  if (cfg.electionMs < 5 * cfg.heartbeatMs) {
    throw new ConfigError(`--election-timeout ${cfg.electionMs} should be at least 5 times --heartbeat-interval ${cfg.heartbeatMs}`);
  }
  if (cfg.electionMs > 50_000) throw new ConfigError(`--election-timeout ${cfg.electionMs} is too long; the maximum is 50000 (ms)`);
  if (cfg.maxLearners < 0 || !Number.isInteger(cfg.maxLearners)) throw new ConfigError(`--max-learners ${cfg.maxLearners} must be a whole number >= 0`);
  if (cfg.snapshotCount < 1) throw new ConfigError(`--snapshot-count ${cfg.snapshotCount} must be at least 1`);
  if (cfg.authTokenTtlSec < 1) throw new ConfigError(`--auth-token-ttl ${cfg.authTokenTtlSec} must be at least 1 (s)`);
  if (cfg.quotaBackendBytes < 0) throw new ConfigError(`--quota-backend-bytes ${cfg.quotaBackendBytes} must not be negative`);
  if (!Number.isInteger(cfg.maxTxnOps) || cfg.maxTxnOps < 1) throw new ConfigError(`--max-txn-ops ${cfg.maxTxnOps} must be a whole number >= 1`);
  if (!Number.isInteger(cfg.maxRequestBytes) || cfg.maxRequestBytes < 1 || cfg.maxRequestBytes > MAX_MAX_REQUEST_BYTES) {
    throw new ConfigError(
      `--max-request-bytes ${cfg.maxRequestBytes} must be a whole number from 1 to ${MAX_MAX_REQUEST_BYTES} (32 MiB: an entry must fit in one message between members)`,
    );
  }
  const own = cfg.initialCluster.get(cfg.name);
  if (!own) {
    throw new ConfigError(`--initial-cluster has no entry for this member's --name "${cfg.name}"; add ${cfg.name}=${advertisePeer[0]}`);
  }
  const sameUrls = [...own].sort().join(',') === [...advertisePeer].sort().join(',');
  if (!sameUrls) {
    throw new ConfigError(
      `--initial-cluster gives ${cfg.name}=${own.join(',')} but --initial-advertise-peer-urls is ${advertisePeer.join(',')}; make them the same`,
    );
  }
  const seen = new Map<string, string>();
  for (const [name, urls] of cfg.initialCluster) {
    for (const u of urls) {
      const other = seen.get(u);
      if (other && other !== name) throw new ConfigError(`--initial-cluster gives the peer URL ${u} to both ${other} and ${name}`);
      seen.set(u, name);
    }
  }
  if (cfg.forceNewCluster && cfg.initialClusterState === 'existing') {
    throw new ConfigError('--force-new-cluster cannot be combined with --initial-cluster-state existing; it starts a new cluster from this data dir');
  }
  checkTls(cfg);
  return cfg;
}

/**
 * The TLS flags against the URLs, and the files themselves (readable, a
 * certificate with its own key, a CA file holding a certificate), as etcd
 * checks them before it starts: one line naming the flag.
 */
function checkTls(cfg: ServerConfig): void {
  const https = (urls: string[]) => urls.find((u) => u.startsWith('https:'));
  const load = (t: MemberTlsConfig, flags: typeof CLIENT_TLS_FLAGS) => {
    try {
      loadTlsFiles(t, flags);
    } catch (e) {
      if (e instanceof TlsFilesError) throw new ConfigError(e.message);
      throw e;
    }
  };
  load(cfg.clientTls, CLIENT_TLS_FLAGS);
  load(cfg.peerTls, PEER_TLS_FLAGS);
  const client = https(cfg.listenClientUrls);
  const metrics = https(cfg.listenMetricsUrls);
  const peer = https(cfg.listenPeerUrls);
  const hasPair = (t: MemberTlsConfig) => !!(t.certFile && t.keyFile);
  if (client && !hasPair(cfg.clientTls)) {
    throw new ConfigError(
      `--listen-client-urls ${client} is https: TLS key/cert (--cert-file, --key-file) must be provided for a client URL with the HTTPS scheme`,
    );
  }
  if (metrics && !hasPair(cfg.clientTls)) {
    throw new ConfigError(`--listen-metrics-urls ${metrics} is https: it is served with the client certificate, so give --cert-file and --key-file`);
  }
  if (peer && !hasPair(cfg.peerTls)) {
    throw new ConfigError(
      `--listen-peer-urls ${peer} is https: TLS key/cert (--peer-cert-file, --peer-key-file) must be provided for a peer URL with the HTTPS scheme`,
    );
  }
  if (cfg.peerTls.allowedCn && !cfg.peerTls.clientCertAuth) {
    throw new ConfigError('--peer-cert-allowed-cn checks the CN of verified peer certificates: give --peer-client-cert-auth and --peer-trusted-ca-file too');
  }
}

/** Ticks: one heartbeat interval per tick. */
export function ticksOf(cfg: ServerConfig): { tickMs: number; heartbeatTick: number; electionTick: number } {
  return { tickMs: cfg.heartbeatMs, heartbeatTick: 1, electionTick: Math.max(2, Math.round(cfg.electionMs / cfg.heartbeatMs)) };
}
