// kubeadm's etcd.yaml: what the recovery reads from it, and its edits as text
// splices: the lines asked for change, every other byte stays.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseEtcdManifest, rewriteEtcdManifest } from '../../src/kube/etcdManifest.js';
import { etcdPodManifest } from '../support/kubeadmManifests.js';

const base = {
  name: 'cp1',
  host: '10.0.0.11',
  clientPort: 2379,
  peerPort: 2380,
  metricsPort: 2381,
  initialCluster: 'cp1=https://10.0.0.11:2380,cp2=https://10.0.0.12:2380,cp3=https://10.0.0.13:2380',
  dataDir: '/var/lib/etcd',
  pkiDir: '/etc/kubernetes/pki/etcd',
};

/** Lines of `after` that differ from `before`'s, by position (the edits here never add or remove lines unless said). */
function changedLines(before: string, after: string): Array<[string, string]> {
  const a = before.split('\n');
  const b = after.split('\n');
  assert.equal(b.length, a.length, 'the edit added or removed lines');
  return a.flatMap((line, i) => (line === b[i] ? [] : [[line, b[i]] as [string, string]]));
}

describe('etcd.yaml', () => {
  test('reads the member from the manifest', () => {
    const m = parseEtcdManifest('etcd.yaml', etcdPodManifest(base));
    assert.equal(m.name, 'cp1');
    assert.equal(m.dataDir, '/var/lib/etcd');
    assert.deepEqual(m.dataVolume, { name: 'etcd-data', hostPath: '/var/lib/etcd', mountPath: '/var/lib/etcd' });
    assert.equal(m.hostDataDir, '/var/lib/etcd');
    assert.equal(m.imageTag, '3.4.23-0');
    assert.deepEqual(m.advertiseClientUrls, ['https://10.0.0.11:2379']);
    assert.deepEqual(m.initialAdvertisePeerUrls, ['https://10.0.0.11:2380']);
    assert.equal(m.tls.peerCertFile, '/etc/kubernetes/pki/etcd/peer.crt');
    assert.equal(m.tls.trustedCaFile, '/etc/kubernetes/pki/etcd/ca.crt');
  });

  test('a restore changes the data volume, the cluster and its state, and nothing else', () => {
    const text = etcdPodManifest(base);
    const m = parseEtcdManifest('etcd.yaml', text);
    const out = rewriteEtcdManifest(m, { hostDataDir: '/var/lib/etcd-restored', initialCluster: 'cp1=https://10.0.0.11:2380', initialClusterState: 'new' });
    // --initial-cluster-state is not in kubeadm's file: it is added after the last flag.
    const added = '    - --initial-cluster-state=new';
    assert.ok(out.includes(`--trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt\n${added}\n`));
    assert.deepEqual(changedLines(text, out.replace(`${added}\n`, '')), [
      [`    - --initial-cluster=${base.initialCluster}`, '    - --initial-cluster=cp1=https://10.0.0.11:2380'],
      ['      path: /var/lib/etcd', '      path: /var/lib/etcd-restored'],
    ]);
    const back = parseEtcdManifest('etcd.yaml', out);
    assert.equal(back.hostDataDir, '/var/lib/etcd-restored');
    assert.equal(back.dataDir, '/var/lib/etcd', 'the container still sees its data at --data-dir');
  });

  test('a new --data-dir moves the mount with it, so all three agree', () => {
    const text = etcdPodManifest(base);
    const out = rewriteEtcdManifest(parseEtcdManifest('etcd.yaml', text), { hostDataDir: '/var/lib/etcd-2', containerDataDir: '/var/lib/etcd-2' });
    assert.deepEqual(changedLines(text, out), [
      ['    - --data-dir=/var/lib/etcd', '    - --data-dir=/var/lib/etcd-2'],
      ['    - mountPath: /var/lib/etcd', '    - mountPath: /var/lib/etcd-2'],
      ['      path: /var/lib/etcd', '      path: /var/lib/etcd-2'],
    ]);
  });

  test('--force-new-cluster never stays in a manifest', () => {
    const text = etcdPodManifest({ ...base, extra: ['--force-new-cluster'] });
    const out = rewriteEtcdManifest(parseEtcdManifest('etcd.yaml', text), { initialClusterState: 'existing' });
    assert.ok(!out.includes('force-new-cluster'));
    assert.equal(parseEtcdManifest('etcd.yaml', out).flags.get('initial-cluster-state'), 'existing');
    assert.equal(out, text.replace('    - --force-new-cluster\n', '    - --initial-cluster-state=existing\n'));
  });

  test('bad manifests are refused in one line, and a good one beside them is read', () => {
    const good = etcdPodManifest(base);
    assert.equal(parseEtcdManifest('etcd.yaml', good).name, 'cp1');
    assert.throws(() => parseEtcdManifest('etcd.yaml', 'spec: [unclosed'), /^InputError: etcd.yaml: not YAML/);
    const outside = good.replace('--data-dir=/var/lib/etcd', '--data-dir=/data/etcd');
    assert.throws(() => parseEtcdManifest('etcd.yaml', outside), /--data-dir \/data\/etcd is under none of the container's volumeMounts/);
    const noDir = good.replace('    - --data-dir=/var/lib/etcd\n', '');
    assert.throws(() => parseEtcdManifest('etcd.yaml', noDir), /has no --data-dir/);
    for (const e of [outside, noDir])
      assert.throws(
        () => parseEtcdManifest('etcd.yaml', e),
        (err: Error) => !err.message.includes('\n'),
      );
  });
});
