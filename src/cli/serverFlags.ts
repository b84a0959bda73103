// `lifeboat server`'s flags as plain data, and the one parser of them. A member
// runs without oclif (bin/run.js → serverEntry.ts): oclif's parser and flag
// builders alone held an idle member about 4 MiB larger for good. oclif still
// prints `lifeboat server --help`, from flags built out of this same table
// (commands/server.ts). The parser keeps oclif's rules and, through exitFor,
// the toolkit's wording of usage errors.
import type { RawServerFlags } from '../server/config.js';

interface FlagBase {
  description: string;
}
export type ServerFlagSpec =
  | (FlagBase & { type: 'string'; default?: string; options?: readonly string[] })
  | (FlagBase & { type: 'integer'; default: number })
  | (FlagBase & { type: 'boolean'; default: boolean; allowNo?: boolean });

const str = (description: string, def?: string): ServerFlagSpec => ({ type: 'string', description, ...(def === undefined ? {} : { default: def }) });
const bool = (description: string): ServerFlagSpec => ({ type: 'boolean', description, default: false });
const int = (description: string, def: number): ServerFlagSpec => ({ type: 'integer', description, default: def });

export const SERVER_FLAGS = {
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
} satisfies Record<string, ServerFlagSpec>;

export type ServerFlags = RawServerFlags;

/** Every flag's environment variable: LIFEBOAT_<FLAG>, the flag winning. */
export const flagEnv = (flag: string) => `LIFEBOAT_${flag.toUpperCase().replace(/-/g, '_')}`;

/** A usage error of `lifeboat server`: exitFor says it in one line with exit 2 and a pointer to `lifeboat server --help`. */
const usage = (message: string) => Object.assign(new Error(message), { parse: {}, commandId: 'server' });

/** oclif's reading of a boolean from the environment. */
const truthy = (v: string) => ['1', 'true', 'y', 'yes'].includes(v.toLowerCase());

function value(flag: string, spec: ServerFlagSpec, raw: string): string | number {
  if (spec.type === 'integer') {
    if (!/^-?\d+$/.test(raw)) throw usage(`Expected an integer but received: ${raw}`);
    return Number.parseInt(raw, 10);
  }
  if (spec.type === 'string' && spec.options && !spec.options.includes(raw)) {
    throw usage(`invalid --${flag} "${raw}": expected one of ${spec.options.join(', ')}`);
  }
  return raw;
}

/**
 * Parses `lifeboat server`'s arguments (after `server`): `--flag value`,
 * `--flag=value`, booleans as `--flag`, `--no-flag` where allowed and etcd's
 * `--flag=true|false`; then LIFEBOAT_<FLAG>, then the default.
 */
export function parseServerArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ServerFlags {
  const specs: Record<string, ServerFlagSpec> = SERVER_FLAGS;
  const given = new Map<string, string | number | boolean>();
  const set = (flag: string, v: string | number | boolean) => {
    if (given.has(flag)) throw usage(`--${flag} can only be given once`);
    given.set(flag, v);
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const m = /^--([^=]+)(?:=([\s\S]*))?$/.exec(arg);
    if (!m) throw usage(`Unexpected argument: ${arg}`);
    const [, name, inline] = m;
    const negated = name.startsWith('no-') ? specs[name.slice(3)] : undefined;
    if (!specs[name] && negated?.type === 'boolean' && negated.allowNo && inline === undefined) {
      set(name.slice(3), false);
      continue;
    }
    const spec = specs[name];
    if (!spec) throw usage(`Nonexistent flag: --${name}`);
    if (spec.type === 'boolean') {
      if (inline === undefined) set(name, true);
      else if (/^(true|1)$/.test(inline)) set(name, true);
      else if (/^(false|0)$/.test(inline)) set(name, false);
      else throw usage(`invalid --${name}="${inline}": expected true or false`);
      continue;
    }
    // A missing value, or the next flag where the value should be, as oclif reads it.
    const raw = inline ?? argv[i + 1];
    if (raw === undefined || (inline === undefined && raw.startsWith('--') && specs[raw.replace(/^--(no-)?|=[\s\S]*$/g, '')])) {
      throw usage(`--${name} needs a value`);
    }
    if (inline === undefined) i++;
    set(name, value(name, spec, raw));
  }
  const flags: Record<string, string | number | boolean | undefined> = {};
  for (const [flag, spec] of Object.entries(specs)) {
    const fromEnv = env[flagEnv(flag)];
    if (given.has(flag)) flags[flag] = given.get(flag);
    else if (fromEnv && spec.type === 'boolean') flags[flag] = truthy(fromEnv);
    else if (fromEnv) flags[flag] = value(flag, spec, fromEnv);
    else flags[flag] = spec.default;
  }
  return flags as unknown as ServerFlags;
}
