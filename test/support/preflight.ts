// Run by `npm test` before any test: every external tool the tests drive must be
// installed. A missing one fails the run at once with one line naming the Debian
// package; nothing is ever skipped.
import { execFileSync } from 'node:child_process';

const TOOLS: Array<[string, string]> = [
  ['etcd', 'etcd-server'],
  ['etcdctl', 'etcd-client'],
  ['tmux', 'tmux'],
  ['openssl', 'openssl'],
  // util-linux's `script`: a pseudo-terminal for the confirmation-prompt tests
  ['script', 'bsdutils'],
  // headless Chromium renders `audit report`'s HTML (test/audit/reportBrowser.test.ts)
  ['chromium', 'chromium'],
  // a private discovery service (discovery.etcd.io), an HTTP proxy to reach it, DNS SRV records (test/server/discovery*.test.ts)
  ['discovery.etcd.io', 'etcd-discovery'],
  ['tinyproxy', 'tinyproxy'],
  ['dnsmasq', 'dnsmasq'],
];

const missing = TOOLS.filter(([tool]) => {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return false;
  } catch {
    return true;
  }
});
if (missing.length > 0) {
  console.error(`npm test needs ${missing.map(([t]) => t).join(', ')}: apt-get install -y ${[...new Set(missing.map(([, p]) => p))].join(' ')}`);
  process.exit(1);
}
