// `lifeboat recover` at a real terminal (tmux) after a 3-member cluster lost two
// members for good: the session offers what the survivor tells — a new data dir
// beside its own, its client URL, the old members to re-add with data dirs beside
// it — so Enter answers; a client URL whose port is taken is asked again with the
// reason; the run ends with the hand-off and the same run as a scripted command.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BIN, LifeboatCluster, etcdctl, killByLock, waitFor } from '../support/lifeboatCluster.js';
import { requireTool } from '../support/tools.js';

describe('lifeboat recover offers what the survivor tells', () => {
  let c: LifeboatCluster;
  const session = `lifeboat-defaults-${process.pid}`;
  const tmux = (...args: string[]) => execFileSync('tmux', args, { encoding: 'utf8', timeout: 5000 });
  const screen = () => tmux('capture-pane', '-t', session, '-p', '-J', '-S', '-1000');
  const busy = net.createServer();
  before(async () => {
    requireTool('tmux');
    c = await LifeboatCluster.start('interactive-defaults', 3);
    assert.equal((await etcdctl(c.endpoints(), 'put', 'kept', 'yes')).code, 0);
    await Promise.all([c.kill(c.members[1]), c.kill(c.members[2])]);
    await c.kill(c.members[0], 'SIGTERM');
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
  });
  after(async () => {
    try {
      tmux('kill-session', '-t', session);
    } catch {
      // already gone
    }
    busy.close();
    for (const name of ['m1', 'm2', 'm3']) killByLock(path.join(c.dir, `${name}-new`));
    await c?.stopAll();
  });

  test('Enter takes the defaults: a new data dir beside the survivor, its client URL, the two old members re-added', async () => {
    const [m1, m2, m3] = c.members;
    const auditDb = path.join(c.dir, 'audit.db');
    tmux('new-session', '-d', '-s', session, '-x', '250', '-y', '50', `${process.execPath} ${BIN} recover --audit-db ${auditDb}; echo EXIT=$?; sleep 120`);
    const waitScreen = (what: RegExp, ms = 30_000) =>
      waitFor(`${what} on the terminal`, () => (what.test(screen()) ? screen() : undefined), ms, 200).catch((e: Error) => {
        throw new Error(`${e.message}; the terminal shows:\n${screen()}`);
      });
    const answer = async (prompt: RegExp, ...keys: string[]) => {
      const before = await waitScreen(prompt);
      if (keys.length > 0) tmux('send-keys', '-t', session, ...keys);
      // the screen changes once the answer is taken
      await waitFor(`the answer to ${prompt}`, () => screen() !== before, 10_000, 100).catch(() => undefined);
      return before;
    };
    const type = (text: string) => tmux('send-keys', '-t', session, '-l', text);

    await waitScreen(/Data dirs of the stopped survivors/);
    type(m1.dataDir);
    await answer(/Data dirs of the stopped survivors/, 'Enter');
    await answer(/Recover from .*\? \(y\/N\)/, 'y', 'Enter');
    const dirPrompt = await answer(/New data dir for the recovered member/, 'Enter');
    assert.match(dirPrompt, new RegExp(`New data dir for the recovered member \\(${path.join(c.dir, 'm1-new')}\\)`), dirPrompt);
    // The survivor's client URL is offered; a taken port is refused at the prompt, with the reason, and asked again.
    const busyUrl = `http://127.0.0.1:${(busy.address() as net.AddressInfo).port}`;
    const urlPrompt = await waitScreen(/Client URL of the recovered member/);
    assert.match(urlPrompt, new RegExp(`Client URL of the recovered member.*\\(${m1.clientUrl}\\)`));
    type(busyUrl);
    tmux('send-keys', '-t', session, 'Enter');
    await waitScreen(/is in use on this host \(another process listens there\)/);
    for (let i = 0; i < busyUrl.length; i++) tmux('send-keys', '-t', session, 'BSpace');
    tmux('send-keys', '-t', session, 'Enter');
    const members = await answer(/Re-add these 2:/, 'Enter');
    assert.match(
      members,
      new RegExp(
        `Re-add these 2: m2=${m2.peerUrl},${m2.clientUrl},${path.join(c.dir, 'm2-new')}; m3=${m3.peerUrl},${m3.clientUrl},${path.join(c.dir, 'm3-new')}`,
      ),
    );
    assert.match(members, /Re-add nobody: the new cluster keeps one member/);
    await answer(/Old member IDs to treat as dead/, 'Enter');
    await answer(/Drop the entries past the survivor's commit index/, 'Enter');
    await waitScreen(/How long must a learner stay caught up/);
    type('1s');
    await answer(/How long must a learner stay caught up/, 'Enter');
    await answer(/started on other hosts/, 'Enter');
    await waitScreen(/Why are you running this playbook/);
    type('drill: defaults');
    await answer(/Why are you running this playbook/, 'Enter');
    await answer(/Build a NEW one-member cluster .*\(y\/N\)/, 'y', 'Enter');
    // The two old members on other hosts (here, dead): the operator confirms each is fenced, as it is asked.
    const answered = new Set<string>();
    await waitFor(
      'both fence questions answered',
      () => {
        const asked = /\? Has (m[23]) \([0-9a-f]+\) been fenced on 127\.0\.0\.1.*\(y\/N\)\s*$/.exec(screen().trimEnd())?.[1];
        if (asked && !answered.has(asked)) {
          tmux('send-keys', '-t', session, 'y', 'Enter');
          answered.add(asked);
        }
        return answered.size === 2 || /EXIT=/.test(screen());
      },
      90_000,
      250,
    );
    const out = await waitScreen(/EXIT=\d+/, 90_000);
    assert.match(out, /EXIT=0/, out);
    assert.match(out, /Hand-off: these members run as processes this run started/);
    for (const name of ['m1', 'm2', 'm3']) assert.match(out, new RegExp(`env file +${path.join(c.dir, `${name}-new`)}\\.env`));
    assert.match(out, new RegExp(`old data dir +${m1.dataDir}: superseded`));
    const scripted = /The same run, scripted \(for the runbook\): (.*)/.exec(out)?.[1] ?? '';
    assert.match(scripted, /^lifeboat playbook run recover-from-quorum-loss --yes --reason 'drill: defaults' /);
    assert.match(scripted, new RegExp(`--set data-dir=${path.join(c.dir, 'm1-new')} `));
    assert.match(scripted, new RegExp(`--set client-url=${m1.clientUrl} `));
    assert.match(scripted, new RegExp(`--set 'members=m2=${m2.peerUrl},${m2.clientUrl},${path.join(c.dir, 'm2-new')};m3=`));

    const list = await etcdctl(m1.clientUrl, 'member', 'list');
    assert.equal(
      list.stdout
        .trim()
        .split('\n')
        .filter((l) => l.includes('started') && l.includes('false')).length,
      3,
      list.stdout,
    );
    assert.equal((await etcdctl(m1.clientUrl, 'get', 'kept', '--print-value-only')).stdout.trim(), 'yes');
  });
});
