// start-member skips a member that already answers at its client URL (a resumed
// run). Any etcd port answers Status — a peer port too — so an answer alone must
// not pass for the member: another process that took the port after the run's
// entry check (a test file running alongside, another cluster on this host) is
// refused, and the member is never taken as started. Found as an intermittent
// failure of etcdRuntime.test's tail fixture: its recovered member's client port
// was another test's etcd peer port, the playbook "succeeded" without starting it,
// and the recovered cluster seemed to hold none of the kept tail.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startMember } from '../../src/playbook/steps/startStopSteps.js';
import type { StepContext } from '../../src/playbook/stepTypes.js';
import { EtcdCluster, type EtcdMember } from '../support/etcdCluster.js';
import { freePorts } from '../support/ports.js';

describe('start-member takes only the member itself as already started', () => {
  let other: EtcdCluster;
  let a1: EtcdMember;
  let dir: string;
  const progress: string[] = [];
  const ctx = (): StepContext => ({
    progress: (t) => progress.push(t),
    event: () => undefined,
    confirm: () => Promise.resolve(true),
    runDir: path.join(dir, 'run'),
    signal: new AbortController().signal,
    connection: { dialTimeoutMs: 1000, commandTimeoutMs: 5000 },
  });

  before(async () => {
    other = await EtcdCluster.start({ size: 1, portSeed: 'start-member-identity' });
    a1 = other.members[0];
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-start-identity-'));
  });
  after(async () => {
    await other?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test("another etcd answering at the member's client URL (its peer port, or its client port) is refused, and nothing is started", async () => {
    const [peer] = await freePorts(1, 'start-member-identity-r');
    const dataDir = path.join(dir, 'r');
    for (const taken of [a1.peerUrl, a1.clientUrl]) {
      const p = {
        name: 'r',
        'data-dir': dataDir,
        'peer-url': `http://127.0.0.1:${peer}`,
        'client-url': taken,
        'initial-cluster': `r=http://127.0.0.1:${peer}`,
        state: 'new',
        runtime: 'etcd',
        timeout: 10_000,
      };
      await assert.rejects(startMember.run(p, ctx()), (e: Error) => {
        assert.equal(e.name, 'SafetyCheckError');
        assert.match(
          e.message,
          new RegExp(
            `^member [0-9a-f]+ of cluster [0-9a-f]+ \\(infra1, peer URL ${a1.peerUrl}\\) answers at ${taken}, not r \\(peer URL http://127.0.0.1:${peer}\\): another process listens there; stop it or choose another client URL$`,
          ),
        );
        return true;
      });
      assert.ok(!fs.existsSync(dataDir), `a member was started on ${dataDir}`);
    }
  });

  test('a learner whose member ID is given: another member answering there is refused', async () => {
    const [peer] = await freePorts(1, 'start-member-identity-l');
    const p = {
      name: 'l',
      'data-dir': path.join(dir, 'l'),
      'peer-url': `http://127.0.0.1:${peer}`,
      'client-url': a1.clientUrl,
      'initial-cluster': `infra1=${a1.peerUrl},l=http://127.0.0.1:${peer}`,
      state: 'existing',
      runtime: 'etcd',
      'member-id': 'abc123',
      timeout: 10_000,
    };
    await assert.rejects(startMember.run(p, ctx()), /^SafetyCheckError: member [0-9a-f]+ of cluster [0-9a-f]+ answers at .*, not l \(member abc123\)/);
  });

  test('the member itself answering (a resumed run) is taken as started, and left running', async () => {
    const p = {
      name: a1.name,
      'data-dir': a1.dataDir,
      'peer-url': a1.peerUrl,
      'client-url': a1.clientUrl,
      'initial-cluster': `${a1.name}=${a1.peerUrl}`,
      state: 'new',
      runtime: 'etcd',
      timeout: 10_000,
    };
    const out = await startMember.run(p, ctx());
    assert.equal(out.started, false);
    assert.ok(progress.includes(`${a1.name} already answers at ${a1.clientUrl}`), progress.join('\n'));
  });
});
