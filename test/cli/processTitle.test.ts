// A password on the command line leaves the process's command line (ps,
// /proc/<pid>/cmdline) as soon as the CLI starts. The CLI is kept busy dialing
// a listener that accepts and never answers, while the test reads its cmdline.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePorts } from '../support/ports.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** The cmdline of a CLI run with `args` once it is busy, then the run stopped. */
async function cmdlineWhileRunning(args: string[], masked = true): Promise<string> {
  const child = spawn(process.execPath, ['bin/run.js', ...args], {
    cwd: root,
    stdio: 'ignore',
    env: { ...process.env, ETCDCTL_PASSWORD: '', LIFEBOAT_PASSWORD: '' },
  });
  try {
    let line = '';
    // Bounded: the CLI masks before loading anything slow; give it up to 10 s (1.5 s to show it does not).
    for (let i = 0; i < (masked ? 100 : 15); i++) {
      await sleep(100);
      line = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').replace(/\0+/g, ' ').trim();
      if (line.startsWith('lifeboat ')) break;
    }
    return line;
  } finally {
    child.kill('SIGKILL');
    await new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once('exit', resolve)));
  }
}

test('passwords given as flags are masked in the process title; a run without one keeps its command line', async () => {
  const [port] = (await freePorts(1, 'processTitle')) as [number];
  const sockets = new Set<net.Socket>();
  const silent = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
  });
  await new Promise<void>((resolve) => silent.listen(port, '127.0.0.1', resolve));
  try {
    const get = ['get', 'k', '--endpoints', `127.0.0.1:${port}`, '--dial-timeout', '20s'];
    // A member waiting on its discovery service (which never answers here) shows no discovery token.
    const member = await cmdlineWhileRunning(['server', '--data-dir', '/nonexistent/lifeboat-title', '--discovery', `http://127.0.0.1:${port}/token-secret`]);
    assert.ok(!/secret/.test(member), `no discovery token in ${member}`);
    assert.match(member, /^lifeboat server .*--discovery \*\*\*$/);
    const joined = await cmdlineWhileRunning([...get, '--user', 'root:hunter2-secret']);
    assert.ok(!/secret/.test(joined), `no password in ${joined}`);
    assert.match(joined, /^lifeboat get k .*--user root:\*\*\*$/);
    const separate = await cmdlineWhileRunning([...get, '--user', 'root', '--password', 'other-secret']);
    assert.equal(separate.replace(/^.*? get k/, 'get k'), `get k --endpoints 127.0.0.1:${port} --dial-timeout 20s --user root --password ***`);
    const equals = await cmdlineWhileRunning([...get, '--user=root', '--password=third-secret']);
    assert.match(equals, /--user=root --password=\*\*\*$/);
    const endpoint = `127.0.0.1:${port}`;
    const migrate = await cmdlineWhileRunning([
      'migrate',
      '--from',
      endpoint,
      '--to',
      endpoint,
      '--from-user=alice:fourth-secret',
      '--to-user',
      'bob:fifth-secret',
      '--dial-timeout',
      '20s',
    ]);
    assert.ok(!/secret/.test(migrate), `no password in ${migrate}`);
    assert.match(migrate, /--from-user=alice:\*\*\* --to-user bob:\*\*\*/);
    const plain = await cmdlineWhileRunning(get, false);
    assert.match(plain, /bin\/run\.js get k --endpoints \S+ --dial-timeout 20s$/, 'nothing to mask: the command line is left as it was');
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }
});
