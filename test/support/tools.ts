// External tools the tests drive. A missing one fails the test at once with one
// line naming the Debian package; nothing is ever skipped.
import { execFileSync } from 'node:child_process';

const PACKAGES: Record<string, string> = { etcdctl: 'etcd-client', etcd: 'etcd-server', openssl: 'openssl', tmux: 'tmux' };

export function requireTool(name: keyof typeof PACKAGES): string {
  try {
    return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(`${name} is required by this test: apt-get install -y ${PACKAGES[name]}`);
  }
}
