// `lifeboat recover --kubeadm` at a real terminal (tmux), on a one-node kubeadm
// control plane run by the kubelet stand-in: the operator answers the playbook's
// questions (the other nodes: none), gives the reason, confirms, and the run
// rebuilds etcd from the node's data dir, every key kept, the manifests back.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { makeKubeadmNodes, type KubeadmNode } from '../support/kubeadmNodes.js';
import { freePorts } from '../support/ports.js';
import { stopProcessesUnder } from '../support/processes.js';
import { etcdctl, requireEtcdTools, requireTool, ROOT, waitFor } from '../support/tools.js';

const BIN = path.join(ROOT, 'bin', 'run.js');
const tmux = (...args: string[]) => execFileSync('tmux', args, { encoding: 'utf8' });

describe('recover --kubeadm at a terminal', () => {
  const session = `lifeboat-kubeadm-${process.pid}`;
  let dir = '';
  let node: KubeadmNode | undefined;
  after(async () => {
    try {
      tmux('kill-session', '-t', session);
    } catch {
      // already gone
    }
    await node?.kubelet.stop();
    if (dir) await stopProcessesUnder(dir);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("answering its prompts rebuilds the node's etcd as a new cluster", async () => {
    requireEtcdTools();
    requireTool('openssl');
    requireTool('tmux');
    dir = mkdtempSync(path.join(os.tmpdir(), 'lifeboat-kubeadm-tty-'));
    [node] = await makeKubeadmNodes(dir, 1, 'kube/kubeadmInteractive', freePorts);
    const n = node;
    const ctl = (...args: string[]) =>
      etcdctl('--endpoints', n.clientUrl, '--cacert', n.clientTls.ca, '--cert', n.clientTls.cert, '--key', n.clientTls.key, '--dial-timeout=2s', ...args);
    n.kubelet.start();
    await waitFor('etcd', async () => (await ctl('endpoint', 'health')).code === 0, { timeoutMs: 30_000 });
    for (let k = 0; k < 5; k++) assert.equal((await ctl('put', `/registry/tty${k}`, 'v')).code, 0);

    const auditDb = path.join(dir, 'audit.db');
    const screen = () => tmux('capture-pane', '-t', session, '-p', '-S', '-300');
    tmux(
      'new-session',
      '-d',
      '-s',
      session,
      '-x',
      '220',
      '-y',
      '50',
      `${process.execPath} ${BIN} recover --kubeadm --manifests-dir ${n.manifestsDir} --audit-db ${auditDb}; echo EXIT=$?; sleep 120`,
    );
    /** Waits for a prompt on the screen, then types the answer. */
    const answer = async (prompt: RegExp, keys: string) => {
      await waitFor(`the prompt ${prompt}`, () => Promise.resolve(prompt.test(screen())), { timeoutMs: 30_000, intervalMs: 200 }).catch((e: Error) => {
        throw new Error(`${e.message}\n${screen()}`);
      });
      if (keys) tmux('send-keys', '-t', session, '-l', keys);
      tmux('send-keys', '-t', session, 'Enter');
      // The next prompt comes once this one is answered.
      await waitFor(`the answer to ${prompt}`, () => Promise.resolve(!prompt.test(screen().trimEnd().split('\n').at(-1) ?? '')), {
        timeoutMs: 10_000,
        intervalMs: 100,
      }).catch(() => undefined);
    };
    // The other nodes: this control plane has none, so nobody is re-added.
    await waitFor('the nodes question', () => Promise.resolve(/❯ Enter the members, one at a time/.test(screen())), { timeoutMs: 30_000, intervalMs: 200 });
    tmux('send-keys', '-t', session, 'Down');
    await waitFor('nobody chosen', () => Promise.resolve(/❯ Re-add nobody/.test(screen())), { timeoutMs: 10_000, intervalMs: 100 });
    tmux('send-keys', '-t', session, 'Enter');
    await answer(/Members \(names or IDs\) to treat as dead/, '');
    await answer(/How long must a learner stay caught up/, '');
    await answer(/Why are you running this playbook/, 'drill: kubeadm at a terminal');
    await answer(/Stop this node's control plane [^]*The old cluster is abandoned\. \(y\/N\)/, 'y');
    const out = await waitFor('the run to end', () => Promise.resolve(/EXIT=\d+/.test(screen()) ? screen() : undefined), {
      timeoutMs: 90_000,
      intervalMs: 500,
    });
    assert.match(out, /EXIT=0/, out);
    assert.match(out, /Run r-\d{8}-\d{6}-[0-9a-f]+ succeeded/, out);
    assert.match(out, /lifeboat playbook run recover-kubeadm-control-plane --yes --reason 'drill: kubeadm at a terminal'/, out);

    // Every key on the rebuilt member; the manifests back; the run recorded with its reason.
    await waitFor('etcd healthy', async () => (await ctl('endpoint', 'health')).code === 0, { timeoutMs: 30_000 });
    const keys = (await ctl('get', '/registry/', '--prefix', '--keys-only')).stdout.split('\n').filter(Boolean);
    assert.equal(keys.length, 5, keys.join(','));
    assert.equal(readdirSync(n.manifestsDir).sort().join(','), 'etcd.yaml,kube-apiserver.yaml');
    const list = JSON.parse(execFileSync(process.execPath, [BIN, 'audit', 'list', '--audit-db', auditDb, '-w', 'json'], { encoding: 'utf8' })) as Array<{
      reason: string;
      playbook?: string;
    }>;
    assert.equal(list.length, 1);
    assert.equal(list[0].reason, 'drill: kubeadm at a terminal');
  });
});
