// `lifeboat recover --kubeadm` on three kubeadm-shaped control-plane nodes run by
// the kubelet stand-in (real etcd 3.4, mutual TLS, openssl certificates as
// kubeadm lays them out). Bad input (no etcd.yaml, a data dir off its volume,
// not YAML, another node's etcd still running) is refused in one line with
// nothing moved; then, two nodes lost, the scripted run from the survivor ends
// with three healthy members, every key, a new cluster ID, manifests changed
// only in the data volume, --initial-cluster and its state, the old data dirs
// fenced and kube-apiserver.yaml back; etcd restarted once more keeps every key.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { issueCert, type TestCerts } from '../support/certs.js';
import { makeKubeadmNodes, type KubeadmNode } from '../support/kubeadmNodes.js';
import { freePorts } from '../support/ports.js';
import { assertFenced, assertVoters, clusterIdVia, revisionVia, waitEveryKey } from '../support/recoveredCluster.js';
import { stopProcessesUnder } from '../support/processes.js';
import { etcdctl, failsWithOneLine, requireEtcdTools, requireTool, ROOT, run, waitFor } from '../support/tools.js';

const BIN = path.join(ROOT, 'bin', 'run.js');
const KEYS = 30;

describe('recover --kubeadm', () => {
  let dir = '';
  let nodes: KubeadmNode[] = [];
  after(async () => {
    for (const n of nodes) await n.kubelet.stop();
    if (dir) await stopProcessesUnder(dir);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('bad input refused with nothing moved; two nodes lost, the survivor rebuilds the control plane', async () => {
    requireEtcdTools();
    requireTool('openssl');
    dir = mkdtempSync(path.join(os.tmpdir(), 'lifeboat-kubeadm-'));
    nodes = await makeKubeadmNodes(dir, 3, 'kube/kubeadmRecovery', freePorts);
    const [cp1, cp2, cp3] = nodes;
    const tls = ['--cacert', cp1.clientTls.ca, '--cert', cp1.clientTls.cert, '--key', cp1.clientTls.key, '--dial-timeout=2s'];
    const ctl = (endpoints: string, ...args: string[]) => etcdctl('--endpoints', endpoints, ...tls, ...args);
    const all = nodes.map((n) => n.clientUrl).join(',');
    const original = new Map(nodes.map((n) => [n.name, readFileSync(path.join(n.manifestsDir, 'etcd.yaml'), 'utf8')]));
    for (const n of nodes) n.kubelet.start();
    await waitFor('the control plane', async () => (await ctl(all, 'endpoint', 'health')).code === 0, { timeoutMs: 40_000 });
    for (let k = 0; k < KEYS; k++) assert.equal((await ctl(cp1.clientUrl, 'put', `/registry/pods/p${k}`, `v${k}`)).code, 0);
    const clusterId = () => clusterIdVia((...a) => ctl(cp1.clientUrl, ...a));
    const oldClusterId = await clusterId();
    const auditDb = path.join(dir, 'audit.db');
    // cp2 is on another host: its manifests dir as members gives it is not on this one, so its steps are printed (and the
    // test, as its operator, follows them on its files here); cp3's files are on this host, so its steps are run.
    const cp2Remote = path.join(dir, 'on-another-host', 'cp2', 'etc/kubernetes/manifests');
    const members = `cp2=${cp2.peerUrl},${cp2.clientUrl},${cp2Remote};cp3=${cp3.peerUrl},${cp3.clientUrl},${cp3.manifestsDir}`;
    const recover = (manifestsDir: string, ...extra: string[]) =>
      run(
        process.execPath,
        [
          BIN,
          'recover',
          '--kubeadm',
          '--manifests-dir',
          manifestsDir,
          '--yes',
          '--reason',
          'test: kubeadm',
          '--audit-db',
          auditDb,
          '--set',
          `members=${members}`,
          '--set',
          'stabilization=1s',
          ...extra,
        ],
        { timeoutMs: 240_000 },
      );
    const listing = (d: string) => (existsSync(d) ? readdirSync(d).sort().join(',') : '(none)');
    const stash = (n: KubeadmNode) => `${n.manifestsDir}-stopped-by-lifeboat`;

    // Bad input, each in a manifests dir of its own beside the real ones: one line, exit 2, nothing moved.
    const bad = (name: string, etcdYaml: string | undefined) => {
      const d = path.join(dir, `bad-${name}`, 'manifests');
      mkdirSync(d, { recursive: true });
      writeFileSync(path.join(d, 'kube-apiserver.yaml'), readFileSync(path.join(cp1.manifestsDir, 'kube-apiserver.yaml')));
      if (etcdYaml !== undefined) writeFileSync(path.join(d, 'etcd.yaml'), etcdYaml);
      return d;
    };
    const yaml = original.get('cp1')!;
    for (const [name, text, says] of [
      ['missing', undefined, 'etcd.yaml does not exist'],
      ['disagree', yaml.replace(`--data-dir=${cp1.dataDir}`, `--data-dir=${cp1.root}/data/etcd`), "is under none of the container's volumeMounts"],
      ['garbage', 'spec: [containers\n  - {{', 'not YAML'],
      // The image's etcd is 3.5 and the etcd-bin here is 3.4: refused before anything changes.
      ['version', yaml.replace('registry.k8s.io/etcd:3.4.23-0', 'registry.k8s.io/etcd:3.5.9-0'), 'runs etcd 3.5.9 (image tag 3.5.9-0) but'],
    ] as const) {
      const d = bad(name, text);
      const before = listing(d);
      failsWithOneLine(await recover(d), 2, says);
      assert.equal(listing(d), before, `${name}: nothing moved`);
      assert.equal(listing(stash({ manifestsDir: d } as KubeadmNode)), '(none)');
    }
    // The other nodes still run etcd: refused (exit 3) before anything moves.
    failsWithOneLine(await recover(cp1.manifestsDir), 3, 'cp2 answers at', 'assume-dead');
    assert.equal(listing(cp1.manifestsDir), 'etcd.yaml,kube-apiserver.yaml');
    assert.equal(listing(stash(cp1)), '(none)');
    assert.ok(cp1.kubelet.pod('etcd.yaml').running);
    // kubeadm's first node names only itself in --initial-cluster: the others are found in its etcd's member list.
    const initNode = bad('init-node', yaml.replace(/--initial-cluster=[^\n]*/, `--initial-cluster=cp1=${cp1.peerUrl}`));
    failsWithOneLine(await recover(initNode), 3, 'cp2 answers at', 'cp3 answers at');
    assert.equal(listing(initNode), 'etcd.yaml,kube-apiserver.yaml');
    assert.equal(listing(stash({ manifestsDir: initNode } as KubeadmNode)), '(none)');

    // Two nodes lost: their machines down (kubelets and pods stopped), cp3's disk gone too.
    await cp2.kubelet.stop();
    await cp3.kubelet.stop();
    rmSync(cp3.dataDir, { recursive: true, force: true });
    // A lost node boots again once its manifests say to rejoin (the recovery rewrote them): its kubelet then runs them.
    let booting = true;
    // cp2's operator, once the learner for cp2 is added: the printed steps, on cp2's own files.
    const joinCp2 = async (listed: string) => {
      const stash2 = stash(cp2);
      mkdirSync(stash2, { recursive: true });
      for (const f of ['kube-apiserver.yaml', 'etcd.yaml']) renameSync(path.join(cp2.manifestsDir, f), path.join(stash2, f));
      const newId = BigInt(/"cluster_id":(\d+)/.exec(listed)![1]).toString(16);
      assert.equal((await run(process.execPath, [BIN, 'datadir', 'fence', cp2.dataDir, '--superseded-by', newId])).code, 0);
      const cluster = (JSON.parse(listed) as { members: Array<{ name?: string; peerURLs: string[] }> }).members
        .map((m) => `${m.name || 'cp2'}=${m.peerURLs[0]}`)
        .join(',');
      mkdirSync(`${cp2.dataDir}-rejoined`, { recursive: true, mode: 0o700 });
      const yaml2 = readFileSync(path.join(stash2, 'etcd.yaml'), 'utf8')
        .replace(`      path: ${cp2.dataDir}\n`, `      path: ${cp2.dataDir}-rejoined\n`)
        .replace(/--initial-cluster=[^\n]*/, `--initial-cluster=${cluster}`)
        .replace('    image: registry', '    - --initial-cluster-state=existing\n    image: registry');
      writeFileSync(path.join(cp2.manifestsDir, 'etcd.yaml'), yaml2);
      rmSync(path.join(stash2, 'etcd.yaml'));
      cp2.kubelet.start();
    };
    const boots = (async () => {
      const pending = new Set([cp2, cp3]);
      for (let i = 0; i < 2400 && booting && pending.size > 0; i++) {
        if (pending.has(cp2) && i % 5 === 0) {
          const l = await ctl(cp1.clientUrl, 'member', 'list', '-w', 'json');
          if (l.code === 0 && l.stdout.includes(`"peerURLs":["${cp2.peerUrl}"],"isLearner":true`)) {
            await joinCp2(l.stdout);
            pending.delete(cp2);
          }
        }
        const f = path.join(cp3.manifestsDir, 'etcd.yaml');
        if (pending.has(cp3) && existsSync(f) && readFileSync(f, 'utf8').includes('-rejoined')) {
          cp3.kubelet.start();
          pending.delete(cp3);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();

    // Dry run: every move and the etcd.yaml change shown, nothing changed.
    const dry = await recover(cp1.manifestsDir, '--dry-run');
    assert.equal(dry.code, 0, dry.stderr);
    assert.ok(dry.stdout.includes(`move ${path.join(cp1.manifestsDir, 'etcd.yaml')} to ${path.join(stash(cp1), 'etcd.yaml')}`), dry.stdout);
    assert.ok(dry.stdout.includes(`+      path: ${cp1.dataDir}-restored`), dry.stdout);
    assert.ok(dry.stdout.includes('+    - --initial-cluster-state=new'), dry.stdout);
    assert.equal(listing(stash(cp1)), '(none)');
    // A node whose manifests dir is not on this host is remote: the steps printed for it use that dir.
    const remoteDir = path.join(dir, 'on-another-host', 'etc/kubernetes/manifests');
    const dryRemote = await recover(cp1.manifestsDir, '--dry-run', '--set', `members=cp3=${cp3.peerUrl},${cp3.clientUrl},${remoteDir}`);
    assert.equal(dryRemote.code, 0, dryRemote.stderr);
    const printed = `print: on cp3's host: mv ${remoteDir}-stopped-by-lifeboat/kube-apiserver.yaml ${remoteDir}/`;
    assert.ok(dryRemote.stdout.includes(printed), `${printed}\n${dryRemote.stdout}`);

    // cp3's peer certificate does not name its address: its rejoin would hang, so the run stops there (exit 3, one line)...
    const peer = (f: string) => path.join(cp3.pkiDir, f);
    const good = { cert: readFileSync(peer('peer.crt')), key: readFileSync(peer('peer.key')) };
    const wrong = await issueCert({ dir: path.join(dir, 'etcd-ca') } as TestCerts, 'cp3-wrong-peer', { cn: 'cp3', sans: 'IP:10.9.9.9' });
    writeFileSync(peer('peer.crt'), readFileSync(wrong.cert));
    writeFileSync(peer('peer.key'), readFileSync(wrong.key));
    const stopped = await recover(cp1.manifestsDir);
    failsWithOneLine(stopped, 3, 'does not name 127.0.0.1', 'kubeadm init phase certs etcd-peer');
    const runId = /Run ID: (r-[0-9a-f-]+)/.exec(stopped.stdout + stopped.stderr)?.[1];
    assert.ok(runId, stopped.stdout);
    assert.equal(listing(cp3.manifestsDir), 'etcd.yaml,kube-apiserver.yaml', "cp3's files untouched");
    // cp2's steps were printed with its manifests dir, and the data dir kubeadm gives every node (this one's).
    for (const line of [
      `on cp2: mkdir -p ${cp2Remote}-stopped-by-lifeboat && mv ${cp2Remote}/kube-apiserver.yaml ${cp2Remote}/etcd.yaml ${cp2Remote}-stopped-by-lifeboat/`,
      `on cp2: lifeboat datadir fence ${cp1.dataDir} --superseded-by `,
      `on cp2: in ${cp2Remote}-stopped-by-lifeboat/etcd.yaml: the etcd-data volume's hostPath to ${cp1.dataDir}-rejoined (new, empty)`,
      `on cp2's host: mv ${cp2Remote}-stopped-by-lifeboat/kube-apiserver.yaml ${cp2Remote}/`,
    ])
      assert.ok(stopped.stdout.includes(line), `${line}\n${stopped.stdout}`);
    renameSync(path.join(stash(cp2), 'kube-apiserver.yaml'), path.join(cp2.manifestsDir, 'kube-apiserver.yaml'));
    // cp1's API server came back before the stop: the run waited for its /readyz.
    assert.ok(stopped.stdout.includes(`kube-apiserver at ${cp1.apiServerUrl} ready`), stopped.stdout);
    // ...and, given its renewed certificate, the resumed run goes on from cp3.
    writeFileSync(peer('peer.crt'), good.cert);
    writeFileSync(peer('peer.key'), good.key);
    const r = await run(process.execPath, [BIN, 'playbook', 'resume', runId, '--yes', '--reason', 'renewed cp3 peer cert', '--audit-db', auditDb], {
      timeoutMs: 240_000,
    });
    booting = false;
    await boots;
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /kubectl -n kube-system edit cm kubeadm-config/);
    assert.match(r.stdout, /restart every kube-apiserver, kube-controller-manager, kube-scheduler and kubelet/);
    // Every move of a manifest is in the audit log, with where it went.
    const audit = await run(process.execPath, [BIN, 'audit', 'export', '--audit-db', auditDb]);
    assert.equal(audit.code, 0, audit.stderr);
    for (const f of ['etcd.yaml', 'kube-apiserver.yaml'])
      assert.ok(
        audit.stdout.includes(`cp1: moved ${path.join(cp1.manifestsDir, f)} to ${path.join(stash(cp1), f)} (stop its pod)`),
        `the move of ${f} is recorded`,
      );
    assert.ok(audit.stdout.includes('etcd.local.dataDir'), 'the kubeadm-config change is recorded');

    // Three healthy voters over mutual TLS, every key on each, a new cluster ID.
    assert.equal((await ctl(all, 'endpoint', 'health')).code, 0);
    await assertVoters((...a) => ctl(cp1.clientUrl, ...a), ['cp1', 'cp2', 'cp3']);
    assert.notEqual(await clusterId(), oldClusterId);
    const onNode = (n: KubeadmNode) => ({ name: n.name, ctl: (...a: string[]) => ctl(n.clientUrl, ...a) });
    await waitEveryKey(nodes.map(onNode), '/registry/', KEYS);

    // Manifests: only the data volume, --initial-cluster and its state changed; the API servers back.
    const changed = (n: KubeadmNode) => {
      const a = original.get(n.name)!.split('\n');
      const b = readFileSync(path.join(n.manifestsDir, 'etcd.yaml'), 'utf8').split('\n');
      return { removed: a.filter((l) => !b.includes(l)), added: b.filter((l) => !a.includes(l)) };
    };
    assert.deepEqual(changed(cp1), {
      removed: [`    - --initial-cluster=${cp1.name}=${cp1.peerUrl},${cp2.name}=${cp2.peerUrl},${cp3.name}=${cp3.peerUrl}`, `      path: ${cp1.dataDir}`],
      added: [`    - --initial-cluster=cp1=${cp1.peerUrl}`, '    - --initial-cluster-state=new', `      path: ${cp1.dataDir}-restored`],
    });
    // A rejoined node: the cluster as the learner add gave it (in the member list's order, which may be the original's), existing, a new data dir.
    const flag = '    - --initial-cluster=';
    const c3 = changed(cp3);
    const other = (lines: string[]) => lines.filter((l) => !l.startsWith(flag));
    assert.deepEqual(other(c3.added), ['    - --initial-cluster-state=existing', `      path: ${cp3.dataDir}-rejoined`]);
    assert.deepEqual(other(c3.removed), [`      path: ${cp3.dataDir}`]);
    const cluster3 = readFileSync(path.join(cp3.manifestsDir, 'etcd.yaml'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith(flag))!;
    assert.deepEqual(cluster3.slice(flag.length).split(',').sort(), [`cp1=${cp1.peerUrl}`, `cp2=${cp2.peerUrl}`, `cp3=${cp3.peerUrl}`]);
    for (const n of nodes) {
      assert.equal(listing(n.manifestsDir), 'etcd.yaml,kube-apiserver.yaml', `${n.name}'s manifests back`);
      assert.ok(n.kubelet.pod('kube-apiserver.yaml').running, `${n.name}'s API server runs`);
    }
    // The old data dirs fenced (cp3's disk was gone).
    await assertFenced([cp1, cp2]);

    // The kubelet restarts etcd once more: every key is still there (the data dir is on its volume).
    const starts = cp1.kubelet.pod('etcd.yaml').starts;
    cp1.kubelet.crash('etcd.yaml');
    await waitFor('etcd restarted', () => Promise.resolve(cp1.kubelet.pod('etcd.yaml').starts === starts + 1));
    await waitFor('cp1 healthy again', async () => (await ctl(cp1.clientUrl, 'endpoint', 'health')).code === 0, { timeoutMs: 30_000 });
    await waitEveryKey([onNode(cp1)], '/registry/', KEYS);
  });
});

describe('recover --kubeadm --from-snapshot', () => {
  let dir = '';
  let nodes: KubeadmNode[] = [];
  after(async () => {
    for (const n of nodes) await n.kubelet.stop();
    if (dir) await stopProcessesUnder(dir);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("a one-node control plane back to its snapshot: the snapshot's keys, the revision bumped past the old data dir's before the API server starts, the old data dir fenced", async () => {
    requireEtcdTools();
    requireTool('openssl');
    dir = mkdtempSync(path.join(os.tmpdir(), 'lifeboat-kubeadm-snap-'));
    nodes = await makeKubeadmNodes(dir, 1, 'kube/kubeadmRecovery-snapshot', freePorts, { components: true });
    const [cp1] = nodes;
    const ctl = (...args: string[]) =>
      etcdctl(
        '--endpoints',
        cp1.clientUrl,
        '--cacert',
        cp1.clientTls.ca,
        '--cert',
        cp1.clientTls.cert,
        '--key',
        cp1.clientTls.key,
        '--dial-timeout=2s',
        ...args,
      );
    cp1.kubelet.start();
    await waitFor('etcd', async () => (await ctl('endpoint', 'health')).code === 0, { timeoutMs: 30_000 });
    const revision = () => revisionVia(ctl);
    for (let k = 0; k < 10; k++) assert.equal((await ctl('put', `/registry/a${k}`, 'v')).code, 0);
    const snap = path.join(dir, 'etcd.snapshot');
    const snapRevision = await revision();
    assert.equal((await ctl('snapshot', 'save', snap)).code, 0);
    // Written after the snapshot: the old data dir's revision is the cluster's last, 20 past the snapshot's.
    for (let k = 0; k < 20; k++) assert.equal((await ctl('put', '/registry/after-the-snapshot', `v${k}`)).code, 0);
    const oldRevision = await revision();
    assert.equal(oldRevision, snapRevision + 20);
    const recoverArgs = [BIN, 'recover', '--kubeadm', '--manifests-dir', cp1.manifestsDir, '--from-snapshot', snap];

    // The dry run says the revision would go back, and that the bump comes before the API server starts.
    const dry = await run(process.execPath, [...recoverArgs, '--dry-run'], { timeoutMs: 60_000 });
    assert.equal(dry.code, 0, `${dry.stdout}\n${dry.stderr}`);
    assert.match(dry.stdout, new RegExp(`would go back from ${oldRevision} to ${snapRevision}.*before kube-apiserver\\.yaml is moved back`));
    const apiLog = path.join(dir, 'cp1-kubelet', 'kube-apiserver.yaml.log');
    const apiLogBefore = readFileSync(apiLog, 'utf8').length;

    const r = await run(
      process.execPath,
      [
        ...recoverArgs,
        '--yes',
        '--reason',
        'test: back to the snapshot',
        '--audit-db',
        path.join(dir, 'audit.db'),
        '--restart-kube-components',
        '--set',
        'restart-wait=1s',
      ],
      { timeoutMs: 120_000 },
    );
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    // --restart-kube-components: the API server (stopped for the restore and started again), controller manager and scheduler restarted once more...
    const starts = (f: string) => cp1.kubelet.pod(f).starts;
    assert.deepEqual(
      ['kube-apiserver.yaml', 'kube-controller-manager.yaml', 'kube-scheduler.yaml'].map(starts),
      [3, 2, 2],
      'the kubelet saw each component restarted',
    );
    assert.equal(readdirSync(cp1.manifestsDir).sort().join(','), 'etcd.yaml,kube-apiserver.yaml,kube-controller-manager.yaml,kube-scheduler.yaml');
    assert.match(r.stdout, /restarted kube-apiserver.yaml, kube-controller-manager.yaml, kube-scheduler.yaml on this node/);
    // ...and after each start the run waited for the API server's /readyz, which answered 503 before 200.
    assert.equal(r.stdout.split(`kube-apiserver at ${cp1.apiServerUrl} ready (/readyz 200 after`).length - 1, 2, r.stdout);
    const answers = readFileSync(path.join(dir, 'cp1-kubelet', 'kube-apiserver.yaml.log'), 'utf8').match(/readyz \d+/g) ?? ([] as string[]);
    assert.ok(answers.includes('readyz 503') && answers.at(-1) === 'readyz 200', answers.join(','));
    // The revision bump (etcd 3.4: writes, then a compaction): past the old data dir's, everything before compacted...
    const bumped = await revision();
    assert.ok(bumped >= oldRevision + 1000, `revision ${bumped} after the recovery, the old data dir's ${oldRevision}`);
    assert.match(r.stdout, new RegExp(`would go back from ${oldRevision} to ${snapRevision}`));
    assert.match(r.stdout, /revision bump: \d+ writes from \d+ to \d+, compacted at \d+/);
    assert.match((await ctl('get', '/registry/a0', '--rev', String(bumped - 1))).stderr, /required revision has been compacted/);
    assert.match(`${r.stdout}${r.stderr}`, /the revision did not \(raised to \d+/);
    // ...made before the API server started: every start since read a revision past the old one.
    const seen = [
      ...readFileSync(apiLog, 'utf8')
        .slice(apiLogBefore)
        .matchAll(/etcd revision (\d+)/g),
    ].map((x) => Number(x[1]));
    assert.equal(seen.length, 2, `the API server's starts after the restore: ${seen.join(',')}`);
    assert.ok(
      seen.every((x) => x >= oldRevision + 1000),
      `the API server saw revisions ${seen.join(',')}; the old data dir's was ${oldRevision}`,
    );
    const registryKeys = async () => (await ctl('get', '/registry/', '--prefix', '--keys-only')).stdout.split('\n').filter(Boolean);
    const keys = await registryKeys();
    assert.equal(keys.length, 10, keys.join(','));
    assert.ok(readFileSync(path.join(cp1.manifestsDir, 'etcd.yaml'), 'utf8').includes(`      path: ${cp1.dataDir}-restored\n`));
    const inspect = await run(process.execPath, [BIN, 'datadir', 'inspect', cp1.dataDir]);
    assert.match(`${inspect.stdout}${inspect.stderr}`, /fenced/);

    /** The end of a recovery's words on cp1: its new data dir, a short API server wait, confirmed, audited. */
    const runOnCp1 = (dataDir: string, reason: string) => [
      '--set',
      `data-dir=${dataDir}`,
      '--set',
      'apiserver-timeout=1s',
      '--yes',
      '--reason',
      reason,
      '--audit-db',
      path.join(dir, 'audit.db'),
    ];
    // The playbook run directly (from the restored data dir) connects as recover --kubeadm does, with the node's own client
    // certificate (no TLS flags given). Its API server, not ready within apiserver-timeout (503 for its first 1.5 s), is a warning.
    const again = await run(
      process.execPath,
      [
        BIN,
        'playbook',
        'run',
        'recover-kubeadm-control-plane',
        '--set',
        `manifests-dir=${cp1.manifestsDir}`,
        ...runOnCp1(`${cp1.dataDir}-again`, 'test: the playbook run directly'),
      ],
      { timeoutMs: 120_000 },
    );
    assert.equal(again.code, 0, `${again.stdout}\n${again.stderr}`);
    assert.match(again.stdout, /healthy: leader [0-9a-f]+/);
    assert.match(again.stdout, /kube-apiserver at https:\/\/127\.0\.0\.1:\d+ not ready within 1s \((its \/readyz last answered 503 |it did not answer)/);
    assert.equal((await registryKeys()).length, 10);

    // A backup store of the cluster as it is now, with a full at this revision; then 20 more writes.
    mkdirSync(path.join(dir, 'store'));
    const store = `file://${path.join(dir, 'store')}`;
    const tls = ['--endpoints', cp1.clientUrl, '--cacert', cp1.clientTls.ca, '--cert', cp1.clientTls.cert, '--key', cp1.clientTls.key];
    const full = await run(process.execPath, [BIN, 'backup', 'full', '--store', store, ...tls], { timeoutMs: 60_000 });
    assert.equal(full.code, 0, `${full.stdout}\n${full.stderr}`);
    const point = await revision();
    for (let k = 0; k < 20; k++) assert.equal((await ctl('put', '/registry/after-the-backup', `v${k}`)).code, 0);
    const before = await revision();
    // A second full: the store's last recorded revision is the cluster's last, and drives the bump.
    const full2 = await run(process.execPath, [BIN, 'backup', 'full', '--store', store, ...tls], { timeoutMs: 60_000 });
    assert.equal(full2.code, 0, `${full2.stdout}\n${full2.stderr}`);
    // A store path without a scheme and point: one line, nothing moved.
    const manifestsBefore = readdirSync(cp1.manifestsDir).sort().join(',');
    const notAPoint = await run(process.execPath, [
      BIN,
      'recover',
      '--kubeadm',
      '--manifests-dir',
      cp1.manifestsDir,
      '--from-backup',
      path.join(dir, 'store'),
      '--yes',
    ]);
    failsWithOneLine(notAPoint, 2, `--from-backup ${path.join(dir, 'store')}: not a store point`);
    assert.equal(readdirSync(cp1.manifestsDir).sort().join(','), manifestsBefore);
    // The older point as the source: replayed, then bumped past the cluster's last revision before the API server starts.
    const fromBackup = await run(
      process.execPath,
      [
        BIN,
        'recover',
        '--kubeadm',
        '--manifests-dir',
        cp1.manifestsDir,
        '--from-backup',
        `${store}@${point}`,
        ...runOnCp1(`${cp1.dataDir}-from-backup`, 'test: back to a backup point'),
      ],
      { timeoutMs: 120_000 },
    );
    assert.equal(fromBackup.code, 0, `${fromBackup.stdout}\n${fromBackup.stderr}`);
    assert.match(fromBackup.stdout, new RegExp(`materialized file://\\S+@${point}: revision ${point} of cluster [0-9a-f]{16}`));
    assert.match(fromBackup.stdout, new RegExp(`last recorded revision ${before}, in the backup store, \\+ 1000.*would go back from ${before} to ${point}`));
    assert.ok((await revision()) >= before + 1000, `revision ${await revision()}, the old data dir's ${before}`);
    assert.equal((await registryKeys()).length, 10);
  });
});
