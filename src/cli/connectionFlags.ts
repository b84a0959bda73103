// The connection flags of every command that talks to members (--endpoints,
// timeouts, auth, TLS, --debug) and --write-out, as plain data (flagParser.ts),
// and the connection options they give. oclif's flags are built from these
// tables (baseCommand.ts); `lifeboat snapshot save` parses them without oclif.
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from '../client/etcdClient.js';
import { InputError } from '../common/errors.js';
import { srvEndpoints } from '../client/srvEndpoints.js';
import { envName, type FlagSpec } from './flagParser.js';
import { askOnTerminal } from './terminalPrompt.js';

export const WRITE_OUT_FORMATS = ['simple', 'json', 'table'] as const;
export type WriteOut = (typeof WRITE_OUT_FORMATS)[number];

export const WRITE_OUT_FLAG = {
  type: 'string',
  char: 'w',
  description: 'output format',
  options: WRITE_OUT_FORMATS,
  default: 'simple',
  helpGroup: 'GLOBAL',
} as const satisfies FlagSpec;

/** LIFEBOAT_<NAME>, then etcdctl's ETCDCTL_<NAME> where etcdctl has one: the flag wins over both. */
const envOf = (name: string, etcdctl = false) => (etcdctl ? [envName('LIFEBOAT', name), envName('ETCDCTL', name)] : [envName('LIFEBOAT', name)]);

/** A duration flag ("5s", "500ms") read as milliseconds, also from LIFEBOAT_<NAME> (and, with `etcdctl`, ETCDCTL_<NAME>). */
export const durationSpec = (name: string, defaultMs: number, defaultText: string, description: string, etcdctl = false) =>
  ({ type: 'duration', description, default: defaultMs, defaultHelp: defaultText, env: envOf(name, etcdctl), helpGroup: 'GLOBAL' }) as const satisfies FlagSpec;

const str = (name: string, description: string, etcdctl = false) =>
  ({ type: 'string', description, env: envOf(name, etcdctl), helpGroup: 'GLOBAL' }) as const satisfies FlagSpec;

export const CONNECTION_FLAGS = {
  endpoints: {
    type: 'string',
    description: 'gRPC endpoints, comma-separated: host:port, http://host:port or https://host:port (TLS)',
    default: '127.0.0.1:2379',
    defaultHelp: '127.0.0.1:2379',
    env: envOf('endpoints', true),
    helpGroup: 'GLOBAL',
  },
  'discovery-srv': str(
    'discovery-srv',
    'DNS domain whose SRV records (_etcd-client-ssl._tcp, _etcd-client._tcp) give the endpoints (instead of --endpoints)',
    true,
  ),
  'discovery-srv-name': str('discovery-srv-name', 'suffix of the SRV service names queried with --discovery-srv', true),
  'dial-timeout': durationSpec('dial-timeout', 2000, '2s', 'how long to wait for a connection, e.g. 2s or 500ms', true),
  'command-timeout': durationSpec('command-timeout', 5000, '5s', 'deadline of each request, e.g. 5s', true),
  user: str('user', 'etcd auth: username[:password] (without a password: --password, or asked on a terminal)', true),
  password: str('password', 'etcd auth: the password of --user (LIFEBOAT_PASSWORD or ETCDCTL_PASSWORD keep it off the command line)'),
  'password-file': str('password-file', 'etcd auth: read the password of --user from the first line of FILE (wins over --password)'),
  cacert: str('cacert', 'verify servers with this CA bundle (PEM)', true),
  cert: str('cert', 'client certificate (PEM), for servers with client-cert auth', true),
  key: str('key', 'client private key (PEM), with --cert', true),
  'insecure-skip-tls-verify': {
    type: 'boolean',
    description: 'accept any server certificate (no chain or host-name check); test clusters only',
    default: false,
    env: envOf('insecure-skip-tls-verify'),
    helpGroup: 'GLOBAL',
  },
  debug: { type: 'boolean', description: 'log every dial and request to stderr; print stack traces', default: false, helpGroup: 'GLOBAL' },
} as const satisfies Record<string, FlagSpec>;

export interface ConnectionFlags {
  'dial-timeout': number;
  'command-timeout': number;
  user?: string;
  password?: string;
  'password-file'?: string;
  cacert?: string;
  cert?: string;
  key?: string;
  'insecure-skip-tls-verify'?: boolean;
  debug?: boolean;
}

/** --endpoints, or with --discovery-srv what the domain's client SRV records give (as etcdctl). */
export async function endpointsFromFlags(flags: Record<string, unknown>): Promise<string> {
  const domain = flags['discovery-srv'];
  if (typeof domain !== 'string' || !domain) return String(flags.endpoints);
  const name = flags['discovery-srv-name'];
  return srvEndpoints(domain, typeof name === 'string' && name ? name : undefined);
}

/** The connection options the EtcdCommand flags give (for clients and for playbook steps). */
export function connectionFromFlags(flags: ConnectionFlags): ConnectionOptions {
  if (flags.debug) process.env.LIFEBOAT_DEBUG = '1';
  const { cacert, cert, key } = flags;
  const tls = {
    ...(cacert ? { caFile: cacert } : {}),
    ...(cert ? { certFile: cert } : {}),
    ...(key ? { keyFile: key } : {}),
    ...(flags['insecure-skip-tls-verify'] ? { insecureSkipVerify: true } : {}),
  };
  return {
    dialTimeoutMs: flags['dial-timeout'],
    commandTimeoutMs: flags['command-timeout'],
    ...(Object.keys(tls).length ? { tls } : {}),
    ...(flags.debug ? { debug: (line: string) => process.stderr.write(`debug: ${line}\n`) } : {}),
    ...credentialsFromFlags(flags),
  };
}

/**
 * --user NAME[:PASSWORD] and --password, as etcdctl reads them (also LIFEBOAT_USER /
 * LIFEBOAT_PASSWORD, then ETCDCTL_USER / ETCDCTL_PASSWORD). A missing password is
 * asked for without echo on a terminal, and is an error without one. The password
 * goes nowhere but the Authenticate call: no log, no error message.
 */
function credentialsFromFlags(flags: ConnectionFlags): Pick<ConnectionOptions, 'credentials'> {
  const password = flags['password-file'] !== undefined ? readPasswordFile(flags['password-file']) : flags.password;
  return credentialsFor(
    flags.user,
    password,
    process.env.ETCDCTL_PASSWORD || undefined,
    '--user',
    '--password, --password-file, NAME:PASSWORD or ETCDCTL_PASSWORD',
  );
}

/** A secret read as etcd's tools read one from a file: its first line, the line break stripped. Its text is never shown. */
export function readPasswordFile(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'a directory' : (code ?? 'unreadable');
    throw new InputError(`--password-file ${file}: cannot read it (${why}); give a readable file with the password on its first line`);
  }
  const first = text.split(/\r?\n/)[0];
  if (first === '') throw new InputError(`--password-file ${file}: its first line is empty; put the password on the first line`);
  return first;
}

/**
 * NAME[:PASSWORD] of `flag`, read as above: `password` (given apart) wins over the
 * one in `spec`, which wins over `fallback`; `passwordHint` says where one can come from.
 */
export function credentialsFor(
  spec: string | undefined,
  password: string | undefined,
  fallback: string | undefined,
  flag: string,
  passwordHint: string,
  promptLabel = '',
): Pick<ConnectionOptions, 'credentials'> {
  if (!spec) return {};
  const colon = spec.indexOf(':');
  const user = colon < 0 ? spec : spec.slice(0, colon);
  if (!user) throw new InputError(`${flag} has no user name; use ${flag} NAME or ${flag} NAME:PASSWORD`);
  const given = password ?? (colon < 0 ? undefined : spec.slice(colon + 1)) ?? fallback;
  if (given !== undefined) return { credentials: { user, password: given } };
  if (!process.stdin.isTTY) {
    throw new InputError(`${flag} ${user} has no password and there is no terminal to ask on; give ${passwordHint.replace('NAME', user)}`);
  }
  // Asked once: every client the command makes (a playbook makes many) reuses the answer.
  let asked: Promise<string> | undefined;
  return { credentials: { user, password: () => (asked ??= askPassword(`${promptLabel}${user}`)) } };
}

async function askPassword(user: string): Promise<string> {
  const { password } = await import('@inquirer/prompts');
  return askOnTerminal((context) => password({ message: `Password of ${user}:` }, context));
}
