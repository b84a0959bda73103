// A member's log: JSON lines on stderr with the member and cluster on each, at
// the level --log-level (etcd's flag) or LIFEBOAT_LOG_LEVEL names. An unknown
// level is refused before the data dir is made, like any bad flag.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { LifeboatCluster, run, BIN, type MemberProc } from '../support/lifeboatCluster.js';

describe('lifeboat server log lines and --log-level', () => {
  let c: LifeboatCluster;
  let m: MemberProc;
  before(async () => {
    c = await LifeboatCluster.create('loglevel', 1);
    m = c.define('m1');
  });
  after(async () => {
    await c?.stopAll();
  });

  const serverArgs = () => ['server', ...c.memberFlags(m), '--initial-cluster', `${m.name}=${m.peerUrl}`];

  test('an unknown level, as the flag or the variable: one line naming the levels, exit 2, nothing written', async () => {
    for (const [args, env, source] of [
      [['--log-level', 'loud'], {}, '--log-level'],
      [[], { LIFEBOAT_LOG_LEVEL: 'loud' }, 'LIFEBOAT_LOG_LEVEL'],
    ] as const) {
      const r = await run(process.execPath, [BIN, ...serverArgs(), ...args], { env: { ...process.env, ...env }, timeoutMs: 30_000 });
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`invalid ${source} "loud": expected one of debug, info, warn, error, silent`));
      assert.ok(!fs.existsSync(`${m.dataDir}/member`), `${m.dataDir}/member was written`);
    }
  });

  test('at warn the member serves without its info lines; by default each line is one JSON object with the member and cluster', async () => {
    c.spawn(m, ['--initial-cluster', `${m.name}=${m.peerUrl}`, '--log-level', 'warn']);
    await c.waitForLeader([m]);
    assert.ok(!m.log.some((l) => l.includes('"level":"info"')), m.log.join('\n'));
    await c.kill(m, 'SIGTERM');

    m.log.length = 0;
    c.spawn(m, ['--initial-cluster', `${m.name}=${m.peerUrl}`]);
    await c.waitForLeader([m]);
    const serving = m.log.map((l) => JSON.parse(l) as Record<string, unknown>).find((o) => o.msg === 'serving');
    assert.ok(serving, m.log.join('\n'));
    assert.equal(serving.level, 'info');
    assert.equal(serving.name, m.name);
    assert.match(String(serving.member), /^[0-9a-f]{1,16}$/);
    assert.match(String(serving.cluster), /^[0-9a-f]{1,16}$/);
    assert.ok(!Number.isNaN(Date.parse(String(serving.time))), String(serving.time));
    assert.deepEqual(serving.clientURLs, [m.clientUrl]);
  });
});
