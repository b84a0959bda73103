// Shared bases for `lifeboat` commands: the global flags and output formatting,
// so each command only calls into src/ and hands its result to `print`.
//
// - BaseCommand: --write-out, printing, and the mapping of our error classes to
//   exit codes (InputError → 2, RefusedError and a locked data dir → 3, anything else → 1).
// - EtcdCommand: BaseCommand plus the connection flags (--endpoints, timeouts,
//   TLS, --debug) and a client built from them, closed when the command ends.
import { Command, Flags, type Interfaces } from '#oclif-core';
import { clientFor, EtcdClient, type ConnectionOptions } from '../client/etcdClient.js';
import { InputError, RefusedError } from '../common/errors.js';
import { DataDirLockedError } from '../storage/errors.js';
import { parseDuration } from '../common/durations.js';
import { EXIT } from './exitCodes.js';
import { toJson } from './output/json.js';
import { renderTable } from './output/table.js';
import { silenceTlsServerNameWarning } from './warnings.js';

export const WRITE_OUT_FORMATS = ['simple', 'json', 'table'] as const;
export type WriteOut = (typeof WRITE_OUT_FORMATS)[number];

export type BaseFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof BaseCommand)['baseFlags'] & T['flags']>;
export type EtcdFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof EtcdCommand)['baseFlags'] & T['flags']>;

/** How one result prints in each --write-out format. */
export interface Renderer<T> {
  simple: (r: T) => string;
  /** absent: a one-row table of the JSON view's fields when flat, else the simple form */
  table?: (r: T) => string;
  /** absent: the result itself (bigints, the IDs, as decimal numbers: etcdctl's uint64s) */
  json?: (r: T) => unknown;
}

export abstract class BaseCommand extends Command {
  static override baseFlags = {
    'write-out': Flags.option({
      char: 'w',
      description: 'output format',
      options: WRITE_OUT_FORMATS,
      default: 'simple' as WriteOut,
      helpGroup: 'GLOBAL',
    })(),
  };

  /** Tag escaping errors with this command's id and the exit code of our error classes. */
  protected override async catch(err: Error & { commandId?: string; oclif?: { exit?: number } }): Promise<unknown> {
    if (typeof err === 'object' && err !== null) {
      if (err.commandId === undefined) err.commandId = this.id;
      if (err instanceof InputError) err.oclif = { exit: EXIT.USAGE };
      else if (err instanceof RefusedError || err instanceof DataDirLockedError) err.oclif = { exit: EXIT.REFUSED };
    }
    return super.catch(err);
  }

  /** Print `result` in the format chosen by --write-out; `simple` renders the human form. */
  protected print<T>(writeOut: WriteOut, result: T, render: ((r: T) => string) | Renderer<T>): void {
    const r: Renderer<T> = typeof render === 'function' ? { simple: render } : render;
    let text: string;
    if (writeOut === 'json') {
      text = toJson(r.json ? r.json(result) : result);
    } else if (writeOut === 'table') {
      text = r.table ? r.table(result) : (genericTable(r.json ? r.json(result) : result) ?? r.simple(result));
    } else {
      text = r.simple(result);
    }
    if (text !== '') this.log(text.replace(/\n$/, ''));
  }
}

function genericTable(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.some(([, v]) => typeof v === 'object' && v !== null)) return undefined;
  return renderTable(
    entries.map(([k]) => k.toUpperCase()),
    [entries.map(([, v]) => (typeof v === 'bigint' ? v.toString(16) : String(v)))],
  );
}

/** etcdctl's variable for a setting, when the LIFEBOAT_* one and the flag are not given. */
const fromEtcdctlEnv = (name: string): string | undefined => process.env[`ETCDCTL_${name.toUpperCase().replaceAll('-', '_')}`] || undefined;

/** A duration flag ("5s", "500ms") read as milliseconds, also from LIFEBOAT_<NAME> (and, with `etcdctl`, ETCDCTL_<NAME>). */
export const durationFlag = (name: string, defaultMs: number, defaultText: string, description: string, etcdctl = false) =>
  Flags.custom<number>({
    description,
    default: etcdctl
      ? () => {
          const v = fromEtcdctlEnv(name);
          return Promise.resolve(v ? parseDuration(v, `ETCDCTL_${name.toUpperCase().replaceAll('-', '_')}`) : defaultMs);
        }
      : defaultMs,
    defaultHelp: () => Promise.resolve(defaultText),
    env: `LIFEBOAT_${name.toUpperCase().replaceAll('-', '_')}`,
    helpGroup: 'GLOBAL',
    // oclif awaits this inside its own try, so a throw here is caught as a rejection would be
    parse: (input) => Promise.resolve(parseDuration(input, `--${name}`)),
  })();

export abstract class EtcdCommand extends BaseCommand {
  static override baseFlags = {
    ...BaseCommand.baseFlags,
    // Each setting: the flag, else LIFEBOAT_*, else etcdctl's ETCDCTL_*, else the default.
    endpoints: Flags.string({
      description: 'gRPC endpoints, comma-separated: host:port, http://host:port or https://host:port (TLS)',
      default: () => Promise.resolve(fromEtcdctlEnv('endpoints') ?? '127.0.0.1:2379'),
      defaultHelp: () => Promise.resolve('127.0.0.1:2379'),
      env: 'LIFEBOAT_ENDPOINTS',
      helpGroup: 'GLOBAL',
    }),
    'dial-timeout': durationFlag('dial-timeout', 2000, '2s', 'how long to wait for a connection, e.g. 2s or 500ms', true),
    'command-timeout': durationFlag('command-timeout', 5000, '5s', 'deadline of each request, e.g. 5s', true),
    user: Flags.string({
      description: 'etcd auth: username[:password] (without a password: --password, or asked on a terminal)',
      env: 'LIFEBOAT_USER',
      helpGroup: 'GLOBAL',
    }),
    password: Flags.string({
      description: 'etcd auth: the password of --user (LIFEBOAT_PASSWORD or ETCDCTL_PASSWORD keep it off the command line)',
      env: 'LIFEBOAT_PASSWORD',
      helpGroup: 'GLOBAL',
    }),
    cacert: Flags.string({ description: 'verify servers with this CA bundle (PEM)', env: 'LIFEBOAT_CACERT', helpGroup: 'GLOBAL' }),
    cert: Flags.string({ description: 'client certificate (PEM), for servers with client-cert auth', env: 'LIFEBOAT_CERT', helpGroup: 'GLOBAL' }),
    key: Flags.string({ description: 'client private key (PEM), with --cert', env: 'LIFEBOAT_KEY', helpGroup: 'GLOBAL' }),
    'insecure-skip-tls-verify': Flags.boolean({
      description: 'accept any server certificate (no chain or host-name check); test clusters only',
      env: 'LIFEBOAT_INSECURE_SKIP_TLS_VERIFY',
      helpGroup: 'GLOBAL',
    }),
    debug: Flags.boolean({ description: 'log every dial and request to stderr; print stack traces', helpGroup: 'GLOBAL' }),
  };

  private clients: EtcdClient[] = [];

  /** A client from the global flags; closed when the command finishes. */
  protected client(flags: EtcdFlags<typeof EtcdCommand>): EtcdClient {
    silenceTlsServerNameWarning();
    const client = clientFor(flags.endpoints, connectionFromFlags(flags));
    this.clients.push(client);
    return client;
  }

  /**
   * After per-endpoint results were printed: one stderr line per endpoint that
   * failed, then exit 1 if any did.
   */
  protected exitIfAnyFailed(failures: Array<{ endpoint: string; message: string }>): void {
    for (const f of failures) process.stderr.write(`Error: ${f.message}\n`);
    if (failures.length > 0) this.exit(EXIT.FAILURE);
  }

  protected override async finally(err: Error | undefined): Promise<unknown> {
    for (const c of this.clients) c.close();
    return super.finally(err);
  }
}

/** `--yes`, for commands that ask before doing something dangerous. */
export const yesFlag = Flags.boolean({
  char: 'y',
  description: 'confirm without asking (needed when there is no terminal to ask on)',
});

interface ConnectionFlags {
  'dial-timeout': number;
  'command-timeout': number;
  user?: string;
  password?: string;
  cacert?: string;
  cert?: string;
  key?: string;
  'insecure-skip-tls-verify'?: boolean;
  debug?: boolean;
}

/** The connection options the EtcdCommand flags give (for clients and for playbook steps). */
export function connectionFromFlags(flags: ConnectionFlags): ConnectionOptions {
  if (flags.debug) process.env.LIFEBOAT_DEBUG = '1';
  const cacert = flags.cacert ?? fromEtcdctlEnv('cacert');
  const cert = flags.cert ?? fromEtcdctlEnv('cert');
  const key = flags.key ?? fromEtcdctlEnv('key');
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
  const spec = flags.user ?? fromEtcdctlEnv('user');
  return credentialsFor(spec, flags.password, process.env.ETCDCTL_PASSWORD || undefined, '--user', '--password, NAME:PASSWORD or ETCDCTL_PASSWORD');
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
  return password({ message: `Password of ${user}:` });
}
