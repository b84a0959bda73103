// The interactive recovery session at a real terminal (tmux): the operator
// names the survivor, reads the plan, confirms, answers the playbook's
// questions and the run succeeds, recorded in the audit log.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BIN, LifeboatCluster, etcdctl, lifeboat, waitFor } from '../support/lifeboatCluster.js';
import { requireTool } from '../support/tools.js';

const tmux = (...args: string[]) => execFileSync('tmux', args, { encoding: 'utf8' });
const screen = (s: string) => tmux('capture-pane', '-t', s, '-p', '-S', '-200');

describe('lifeboat recover at a terminal', () => {
  let c: LifeboatCluster;
  const session = `lifeboat-test-${process.pid}`;
  let recoveredDir = '';
  before(async () => {
    requireTool('tmux');
    c = await LifeboatCluster.start('interactive', 1);
    assert.equal((await etcdctl(c.members[0].client, 'put', 'kept', 'yes')).code, 0);
    await c.kill(c.members[0], 'SIGTERM');
  });
  after(async () => {
    try {
      tmux('kill-session', '-t', session);
    } catch {
      // already gone
    }
    try {
      process.kill(Number(fs.readFileSync(path.join(recoveredDir, 'member', 'lock'), 'utf8').split(' ')[0]), 'SIGKILL');
    } catch {
      // not running
    }
    await c?.stopAll();
  });

  test('answering its prompts recovers the survivor into a new cluster', async () => {
    const m1 = c.members[0];
    recoveredDir = path.join(c.dir, 'recovered');
    const client = c.define('r1');
    const auditDb = path.join(c.dir, 'audit.db');
    tmux('new-session', '-d', '-s', session, '-x', '220', '-y', '50', `${process.execPath} ${BIN} recover --audit-db ${auditDb}; echo EXIT=$?; sleep 120`);
    /** Wait for text on the screen, then type the answer. */
    const answer = async (prompt: RegExp, keys: string) => {
      await waitFor(`the prompt ${prompt}`, () => prompt.test(screen(session)), 30_000, 200);
      tmux('send-keys', '-t', session, keys, 'Enter');
      await waitFor(`the answer to ${prompt}`, () => !new RegExp(`\\? ${prompt.source}[^\\n]*$`).test(screen(session).trimEnd()), 10_000, 100).catch(
        () => undefined,
      );
    };
    await answer(/Data dirs of the stopped survivors/, m1.dataDir);
    await answer(/Recover from .*\? \(y\/N\)/, 'y');
    await answer(/New data dir for the recovered member/, recoveredDir);
    await answer(/Client URL of the recovered member/, client.clientUrl);
    // A survivor with no other members offers nobody to re-add: the default is to enter members, "nobody" is its own answer.
    await waitFor('the members question', () => /Enter the members, one at a time/.test(screen(session)), 30_000, 200);
    tmux('send-keys', '-t', session, 'Down');
    await waitFor('nobody chosen', () => /❯ Re-add nobody: the new cluster keeps one member/.test(screen(session)), 10_000, 100);
    tmux('send-keys', '-t', session, 'Enter');
    await answer(/Old member IDs to treat as dead/, '');
    await answer(/Drop the entries past the survivor's commit index/, '');
    await answer(/How long must a learner stay caught up/, '');
    await answer(/started on other hosts/, '');
    await answer(/Why are you running this playbook/, 'drill at a terminal');
    await answer(/Build a NEW one-member cluster .*\(y\/N\)/, 'y');
    const out = await waitFor('the run to end', () => (/EXIT=\d+/.test(screen(session)) ? screen(session) : undefined), 90_000, 500);
    assert.match(out, /EXIT=0/, out);
    assert.match(out, /Run r-\d{8}-\d{6}-[0-9a-f]+ succeeded/);
    // The recovered member runs as a process of the CLI: the run hands it over, and prints itself for the runbook.
    assert.match(out, /Hand-off: this member runs as a process this run started/);
    assert.match(out, /The same run, scripted \(for the runbook\): lifeboat playbook run recover-from-quorum-loss --yes --reason 'drill at a terminal' /);
    const got = await etcdctl(client.client, 'get', 'kept', '--print-value-only');
    assert.equal(got.stdout.trim(), 'yes');
    const list = await lifeboat('audit', 'list', '--audit-db', auditDb, '-w', 'json');
    const runs = JSON.parse(list.stdout);
    assert.equal(runs.length, 1);
    assert.equal(runs[0].reason, 'drill at a terminal');
    const show = await lifeboat('audit', 'show', runs[0].id, '--audit-db', auditDb, '-w', 'json');
    const shown = JSON.parse(show.stdout) as {
      run: { startedAt: string };
      timeline: Array<{ entry: string; at: string; kind?: string; message?: string; data?: Record<string, unknown> }>;
    };
    const timeline = shown.timeline;
    const prompts = timeline.filter((e) => e.entry === 'event' && e.kind === 'prompt');
    // Recorded in the order they were asked, each at the moment it was answered (not all at the run's start).
    assert.match(prompts[0].message ?? '', /^Data dirs of the stopped survivors/, JSON.stringify(prompts.map((p) => p.message)));
    assert.match(prompts.at(-2)?.message ?? '', /^Why are you running this playbook/);
    const before = prompts.slice(0, -1).map((p) => Date.parse(p.at));
    for (let i = 1; i < before.length; i++)
      assert.ok(before[i] > before[i - 1], `answered in order, at their own times: ${prompts.map((p) => `${p.at} ${p.message}`).join('\n')}`);
    assert.ok(before[0] < Date.parse(shown.run.startedAt), 'the survivors were named before the run started');
    // An empty answer to a list question is the empty list, not the text "(none)".
    assert.deepEqual(prompts.find((e) => /Old member IDs to treat as dead/.test(e.message ?? ''))?.data?.answer, []);
    // What recover worked out from the plan is labelled as the plan's, not as --set.
    const playbook = timeline.find((e) => e.entry === 'event' && e.kind === 'playbook');
    const sources = playbook?.data?.variableSources as Record<string, string>;
    assert.equal(sources.source, 'plan', JSON.stringify(sources));
    assert.equal(sources['peer-url'], 'plan');
    assert.equal(sources['assume-dead'], 'prompt');
    // The session's own questions and the plan it showed are in the run, not only the playbook's.
    assert.ok(
      prompts.some((e) => /Data dirs of the stopped survivors/.test(e.message ?? '') && e.data?.answer === m1.dataDir),
      JSON.stringify(prompts),
    );
    assert.ok(
      prompts.some((e) => e.message === `Recover from ${path.resolve(m1.dataDir)}?` && e.data?.answer === true),
      JSON.stringify(prompts),
    );
    const plan = timeline.find((e) => e.entry === 'event' && e.kind === 'plan');
    assert.ok(plan && String(plan.data?.text).includes('Recommended:'), 'the plan shown is not recorded');
    assert.ok(prompts.some((e) => /Client URL of the recovered member/.test(e.message ?? '') && e.data?.answer === client.clientUrl));
    assert.ok(prompts.some((e) => /Build a NEW one-member cluster/.test(e.message ?? '') && e.data?.answer === true));
  });
});
