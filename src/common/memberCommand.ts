// How a member of either runtime is started: the same settings (etcd's flag names,
// which `lifeboat server` shares) as a command line or as an environment block
// (etcd reads ETCD_<FLAG>, the Lifeboat member LIFEBOAT_<FLAG>).

export type RuntimeName = 'lifeboat' | 'etcd';

/**
 * Node's flags for a Lifeboat member, before `bin/run.js server`: a young
 * generation of at most 4 MiB per semi-space (V8's default grows to 16 MiB, and
 * under load a member holds that much more memory for no fewer collections), an
 * old generation let grow by half its live size between full collections (V8
 * otherwise lets a small heap grow to several times it, and under load the
 * garbage waited there: about 18 MiB more at 100 clients, for the same CPU per
 * put), and one V8 helper thread instead of four (on our two cores the extra
 * helpers bought no CPU per put or latency, and each left malloc arenas behind:
 * an idle member held 5 MiB more a minute after start). Measured in the commits
 * that set them (bench/results/); V8 takes them only at start-up (and node refuses
 * the second in NODE_OPTIONS).
 */
export const MEMBER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4', '--heap-growing-percent=50', '--v8-pool-size=1'];

/** node's argv for a Lifeboat member: its flags, the entry, `server`, then `args`. */
export function lifeboatServerArgv(bin: string, args: readonly string[]): string[] {
  return [...MEMBER_NODE_FLAGS, bin, 'server', ...args];
}

/** [flag without dashes, value] in the order they are printed. */
export type MemberSettings = ReadonlyArray<readonly [string, string]>;

/** Quote for a POSIX shell only when needed. */
export function shellQuote(s: string): string {
  if (/^[A-Za-z0-9_\-.,:/=@+%]+$/.test(s)) return s;
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Boolean settings: one `--flag=true` argument (Go's flag package, etcd's, reads `--flag true` as a stray argument). */
export const BOOLEAN_SETTINGS: ReadonlySet<string> = new Set(['client-cert-auth', 'peer-client-cert-auth']);

/** `--name infra4 --data-dir …` as arguments. */
export function settingsArgs(settings: MemberSettings): string[] {
  return settings.flatMap(([k, v]) => (BOOLEAN_SETTINGS.has(k) ? [`--${k}=${v}`] : [`--${k}`, v]));
}

/** The command an operator types: `etcd …` or `lifeboat server …`. */
export function memberCommandLine(runtime: RuntimeName, settings: MemberSettings): string {
  return [runtime === 'etcd' ? 'etcd' : 'lifeboat server', ...settingsArgs(settings).map(shellQuote)].join(' ');
}

/** The same settings as ETCD_* / LIFEBOAT_* variables. */
export function memberEnvironment(runtime: RuntimeName, settings: MemberSettings): Array<[string, string]> {
  const prefix = runtime === 'etcd' ? 'ETCD' : 'LIFEBOAT';
  return settings.map(([k, v]) => [`${prefix}_${k.toUpperCase().replace(/-/g, '_')}`, v]);
}
