// `lifeboat server --discovery-srv`: the initial cluster from DNS SRV records
// served by a real DNS server (Debian's dnsmasq on port 53 of a loopback address),
// reached by each member's resolver inside `unshare -m` with a bind-mounted
// resolv.conf. The cluster forms from the records alone; a member whose peer URL
// is not among them is refused.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BIN, LifeboatCluster, etcdctl, run, type MemberProc } from '../support/lifeboatCluster.js';
import { requireTool, stopProcess, waitFor } from '../support/tools.js';

describe('lifeboat server --discovery-srv', () => {
  let c: LifeboatCluster;
  let dnsmasq: ChildProcess | undefined;
  let members: MemberProc[];
  let wrap: string[];
  // A loopback address of this test file's own (any 127.x.y.z answers on Linux).
  const dnsAddress = `127.0.54.${20 + (process.pid % 200)}`;
  before(async () => {
    requireTool('dnsmasq');
    c = await LifeboatCluster.create('discovery-srv', 4);
    members = ['m1', 'm2', 'm3'].map((n) => c.define(n));
    const resolvConf = path.join(c.dir, 'resolv.conf');
    fs.writeFileSync(resolvConf, `nameserver ${dnsAddress}\n`);
    wrap = ['unshare', '-m', 'sh', '-c', `mount --bind ${resolvConf} /etc/resolv.conf && exec "$@"`, 'sh'];
    const records = members.flatMap((m) => [
      `--srv-host=_etcd-server._tcp.lb.test,${m.name}.lb.test,${new URL(m.peerUrl).port}`,
      `--srv-host=_etcd-client._tcp.lb.test,${m.name}.lb.test,${new URL(m.clientUrl).port}`,
      `--host-record=${m.name}.lb.test,127.0.0.1`,
    ]);
    const log = fs.openSync(path.join(c.dir, 'dnsmasq.log'), 'a');
    dnsmasq = spawn(
      'dnsmasq',
      ['-k', '--no-resolv', '--no-hosts', `--listen-address=${dnsAddress}`, '--bind-interfaces', '--port=53', '--user=root', '--pid-file=', ...records],
      { stdio: ['ignore', log, log] },
    );
    fs.closeSync(log);
    await waitFor('dnsmasq to answer', async () => (await run(...withDns(['getent', 'hosts', 'm1.lb.test']))).stdout.includes('127.0.0.1'), {
      timeoutMs: 10_000,
      intervalMs: 100,
    });
  });
  after(async () => {
    await c?.stopAll();
    if (dnsmasq) await stopProcess(dnsmasq);
  });
  const withDns = (cmd: string[]): [string, string[]] => [wrap[0], [...wrap.slice(1), ...cmd]];

  test('three members given only the SRV domain form one cluster, with the records as peer URLs', async () => {
    for (const m of members) c.spawn(m, ['--discovery-srv', 'lb.test'], { wrap });
    await c.waitStarted(3);
    const list = await etcdctl(c.endpoints(), 'member', 'list');
    for (const m of members) assert.ok(list.stdout.includes(`, ${m.name}, http://${m.name}.lb.test:${new URL(m.peerUrl).port}, `), list.stdout);
  });

  test("the toolkit's --discovery-srv finds the client endpoints from _etcd-client._tcp records; a domain without them is refused", async () => {
    const r = await run(...withDns([process.execPath, BIN, 'member', 'list', '--discovery-srv', 'lb.test']), { timeoutMs: 30_000 });
    assert.equal(r.code, 0, r.stderr);
    for (const m of members) assert.ok(r.stdout.includes(`, ${m.name}, `), r.stdout);
    const none = await run(...withDns([process.execPath, BIN, 'member', 'list', '--discovery-srv', 'nothing.test']), { timeoutMs: 30_000 });
    assert.equal(none.code, 2, none.stderr);
    assert.match(none.stderr, /--discovery-srv nothing\.test: no SRV records .*give --endpoints/);
  });

  test('a member whose peer URL is not among the records is refused in one line, writing nothing', async () => {
    const m4 = c.define('m4');
    const r = await run(...withDns([process.execPath, BIN, 'server', ...c.memberFlags(m4), '--discovery-srv', 'lb.test']), { timeoutMs: 30_000 });
    assert.equal(r.code, 1, r.stderr);
    const lines = r.stderr
      .trim()
      .split('\n')
      .filter((l) => l && !l.startsWith('{'));
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], /couldn't find local name "m4" in the initial cluster configuration from DNS SRV records for lb\.test/);
    assert.ok(!fs.existsSync(`${m4.dataDir}/member`), 'the refused member wrote a data dir');
  });
});
