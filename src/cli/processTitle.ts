// Passwords given on the command line (`--password`, `--user name:password` and
// their --from-/--to- forms) are visible to every user of the host in `ps` and
// /proc/<pid>/cmdline. Node's process.title overwrites the memory the kernel
// shows there, so the command line is rewritten with them masked as soon as the
// CLI starts (a process listing taken in its first moments can still see them:
// docs/operations/tls-and-auth.md recommends ETCDCTL_PASSWORD or a prompt).
// `lifeboat server --discovery URL`: the URL holds the discovery token, which admits members to the cluster.
const PASSWORD_FLAGS = new Set(['--password', '--from-password', '--to-password', '--discovery']);
const USER_FLAGS = new Set(['--user', '--from-user', '--to-user']);
const MASK = '***';

/** The `name:password` of a --user flag with its password masked. */
const maskUser = (v: string): string => (v.includes(':') ? `${v.slice(0, v.indexOf(':'))}:${MASK}` : v);

/** `args` (the CLI's arguments) with every password masked. */
export function maskedArguments(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const eq = a.indexOf('=');
    const flag = a.startsWith('--') && eq > 0 ? a.slice(0, eq) : a;
    if (flag !== a) {
      const v = a.slice(eq + 1);
      out.push(PASSWORD_FLAGS.has(flag) ? `${flag}=${MASK}` : USER_FLAGS.has(flag) ? `${flag}=${maskUser(v)}` : a);
      continue;
    }
    out.push(a);
    if (a === '--') {
      out.push(...args.slice(i + 1));
      break;
    }
    if ((PASSWORD_FLAGS.has(a) || USER_FLAGS.has(a)) && i + 1 < args.length) {
      const v = args[++i];
      out.push(PASSWORD_FLAGS.has(a) ? MASK : maskUser(v));
    }
  }
  return out;
}

/** Rewrites this process's command line when it carries a password. */
export function maskPasswordsInProcessTitle(argv: readonly string[] = process.argv): void {
  const args = argv.slice(2);
  const masked = maskedArguments(args);
  if (masked.every((a, i) => a === args[i])) return;
  process.title = ['lifeboat', ...masked].join(' ');
}
