// A first start whose port is taken writes nothing: every listener is checked
// before the data dir is made, the member exits 1 with one line naming the URL,
// and the next start with corrected flags makes the member from those flags.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { LifeboatCluster, etcdctl, lifeboat, waitFor, type MemberProc } from '../support/lifeboatCluster.js';

describe('lifeboat server with a port in use', () => {
  let c: LifeboatCluster;
  let m: MemberProc;
  let squatter: net.Server;
  let busyUrl: string;
  before(async () => {
    c = await LifeboatCluster.create('firststart', 1);
    m = c.define('m1');
    const spare = c.define('spare');
    busyUrl = spare.clientUrl;
    squatter = net.createServer();
    await new Promise<void>((resolve) => squatter.listen({ host: '127.0.0.1', port: Number(new URL(busyUrl).port) }, resolve));
  });
  after(async () => {
    squatter?.close();
    await c?.stopAll();
  });

  test('exits 1 naming the client URL in use, and writes nothing to the data dir', async () => {
    const r = await lifeboat('server', ...c.memberFlags({ ...m, clientUrl: busyUrl }), '--initial-cluster', `${m.name}=${m.peerUrl}`);
    assert.equal(r.code, 1, r.stderr);
    const lines = r.stderr
      .trim()
      .split('\n')
      .filter((l) => !l.startsWith('{'));
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], new RegExp(`cannot listen on client URL ${busyUrl.replace(/[.]/g, '\\.')}: the address is in use`));
    assert.ok(!fs.existsSync(`${m.dataDir}/member`), `${m.dataDir}/member was written`);
  });

  test('the next start with a free port serves, with the corrected client URL', async () => {
    c.spawn(m, ['--initial-cluster', `${m.name}=${m.peerUrl}`]);
    await c.waitForLeader([m]);
    const list = await waitFor('the member to publish its client URL', async () => {
      const r = await etcdctl(m.client, 'member', 'list');
      return r.code === 0 && r.stdout.includes(', started, ') ? r.stdout : undefined;
    });
    assert.ok(list.includes(m.clientUrl) && !list.includes(busyUrl), list);
  });

  test("a second member on a running member's data dir, and recover plan on it, are refused with exit 3", async () => {
    const again = await lifeboat(
      'server',
      '--name',
      m.name,
      '--data-dir',
      m.dataDir,
      '--listen-peer-urls',
      `http://127.0.0.1:${Number(new URL(busyUrl).port) + 1000}`,
      '--initial-advertise-peer-urls',
      m.peerUrl,
      '--listen-client-urls',
      `http://127.0.0.1:${Number(new URL(busyUrl).port) + 1001}`,
      '--advertise-client-urls',
      m.clientUrl,
      '--initial-cluster',
      `${m.name}=${m.peerUrl}`,
    );
    assert.equal(again.code, 3, again.stderr);
    assert.match(again.stderr, /is locked by pid \d+/);
    const plan = await lifeboat('recover', 'plan', '--from-data-dir', m.dataDir);
    assert.equal(plan.code, 3, plan.stdout + plan.stderr);
    assert.match(plan.stderr, /is locked by pid \d+/);
  });
});
