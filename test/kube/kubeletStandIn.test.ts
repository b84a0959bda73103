// The kubelet stand-in the Kubernetes recovery tests run etcd with: a static pod
// is restarted when it dies and keeps what it wrote on its hostPath volume; a
// --data-dir outside the mount is written into the container's own filesystem
// and is gone after the next restart; a manifest moved away stops its pod; a
// failing liveness probe restarts it.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { makeKubeadmNodes, type KubeadmNode } from '../support/kubeadmNodes.js';
import { freePorts } from '../support/ports.js';
import { stopProcessesUnder } from '../support/processes.js';
import { etcdctl, requireEtcdTools, requireTool, waitFor } from '../support/tools.js';

const ctl = (n: KubeadmNode, ...args: string[]) =>
  etcdctl('--endpoints', n.clientUrl, '--cacert', n.clientTls.ca, '--cert', n.clientTls.cert, '--key', n.clientTls.key, '--dial-timeout=2s', ...args);
const healthy = (n: KubeadmNode) => waitFor(`${n.name} healthy`, async () => (await ctl(n, 'endpoint', 'health')).code === 0, { timeoutMs: 30_000 });
const get = async (n: KubeadmNode, key: string) => (await ctl(n, 'get', key, '--print-value-only')).stdout.trim();

describe('kubelet stand-in', () => {
  let dir = '';
  let node: KubeadmNode | undefined;
  after(async () => {
    await node?.kubelet.stop();
    if (dir) await stopProcessesUnder(dir);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('restarts a dead pod with its volume; a data dir outside the mount is lost; a moved manifest stops the pod; a failing probe restarts it', async () => {
    requireEtcdTools();
    requireTool('openssl');
    dir = mkdtempSync(path.join(os.tmpdir(), 'lifeboat-kubelet-'));
    [node] = await makeKubeadmNodes(dir, 1, 'kube/kubeletStandIn', freePorts);
    const n = node;
    n.kubelet.start();
    await healthy(n);
    assert.equal((await ctl(n, 'put', 'k', 'kept')).code, 0);
    n.kubelet.crash('etcd.yaml');
    await waitFor('a restart', () => Promise.resolve(n.kubelet.pod('etcd.yaml').starts === 2));
    await healthy(n);
    assert.equal(await get(n, 'k'), 'kept', 'the data dir is on the hostPath volume');

    // --data-dir outside the mount: the container's own filesystem, a fresh one each start.
    const file = path.join(n.manifestsDir, 'etcd.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace(`--data-dir=${n.dataDir}`, `--data-dir=${n.dataDir}-outside`));
    await waitFor('the changed pod', () => Promise.resolve(n.kubelet.pod('etcd.yaml').starts === 3));
    await healthy(n);
    assert.equal(await get(n, 'k'), '', 'a new member in the container');
    assert.equal((await ctl(n, 'put', 'k2', 'lost')).code, 0);
    n.kubelet.crash('etcd.yaml');
    await waitFor('a restart', () => Promise.resolve(n.kubelet.pod('etcd.yaml').starts === 4));
    await healthy(n);
    assert.equal(await get(n, 'k2'), '', 'what was written outside the mount is gone');

    renameSync(file, path.join(dir, 'etcd.yaml.away'));
    await waitFor('the pod to stop', async () => !n.kubelet.pod('etcd.yaml').running && (await ctl(n, 'endpoint', 'health')).code !== 0);
    assert.ok(n.kubelet.pod('kube-apiserver.yaml').running, 'the API server pod still runs');

    // A liveness probe that fails failureThreshold times in a row restarts the pod.
    const api = path.join(n.manifestsDir, 'kube-apiserver.yaml');
    const [closed] = await freePorts(1, 'kube/kubeletStandIn-probe');
    const probe = `    livenessProbe:\n      failureThreshold: 2\n      httpGet:\n        host: 127.0.0.1\n        path: /livez\n        port: ${closed}\n        scheme: HTTP\n      periodSeconds: 5\n    name: kube-apiserver\n`;
    writeFileSync(api, readFileSync(api, 'utf8').replace('    name: kube-apiserver\n', probe));
    const before = n.kubelet.pod('kube-apiserver.yaml').starts;
    await waitFor('a restart after failed probes', () => Promise.resolve(n.kubelet.pod('kube-apiserver.yaml').starts >= before + 2), { timeoutMs: 15_000 });
  });
});
