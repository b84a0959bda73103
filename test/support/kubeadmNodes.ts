// kubeadm-shaped control-plane nodes under a temporary root, for tests of the
// Kubernetes recovery: each node has ROOT/NODE/etc/kubernetes/manifests
// (etcd.yaml and kube-apiserver.yaml as kubeadm writes them),
// ROOT/NODE/etc/kubernetes/pki/etcd (one etcd CA; server, peer and
// healthcheck-client certificates per node, made with openssl) and its data
// dir at ROOT/NODE/var/lib/etcd. Run by a KubeletStandIn each.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { issueCert, makeCerts } from './certs.js';
import { etcdPodManifest } from './kubeadmManifests.js';
import { KubeletStandIn } from './kubeletStandIn.js';

export interface KubeadmNode {
  name: string;
  root: string;
  manifestsDir: string;
  pkiDir: string;
  dataDir: string;
  clientUrl: string;
  peerUrl: string;
  metricsPort: number;
  /** the node's own etcd client certificate (kubeadm's healthcheck-client) */
  clientTls: { ca: string; cert: string; key: string };
  kubelet: KubeletStandIn;
}

/** A stand-in API server's static pod: it only sleeps, but it is run and stopped as the real one would be. */
export function apiServerPodManifest(clientUrl: string, pkiRoot: string): string {
  return `apiVersion: v1
kind: Pod
metadata:
  labels:
    component: kube-apiserver
    tier: control-plane
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - command:
    - kube-apiserver
    - --etcd-cafile=${pkiRoot}/etcd/ca.crt
    - --etcd-certfile=${pkiRoot}/apiserver-etcd-client.crt
    - --etcd-keyfile=${pkiRoot}/apiserver-etcd-client.key
    - --etcd-servers=${clientUrl}
    image: registry.k8s.io/kube-apiserver:v1.28.2
    name: kube-apiserver
  hostNetwork: true
status: {}
`;
}

/** Three (or `count`) nodes of one etcd cluster, their pki and manifests written; the kubelets not started. */
export async function makeKubeadmNodes(
  dir: string,
  count: number,
  portSeed: string,
  freePorts: (n: number, seed: string) => Promise<number[]>,
): Promise<KubeadmNode[]> {
  const caDir = path.join(dir, 'etcd-ca');
  mkdirSync(caDir, { recursive: true });
  const certs = await makeCerts(caDir);
  const ports = await freePorts(count * 3, portSeed);
  const names = Array.from({ length: count }, (_, i) => `cp${i + 1}`);
  const specs = names.map((name, i) => ({
    name,
    root: path.join(dir, name),
    clientPort: ports[3 * i],
    peerPort: ports[3 * i + 1],
    metricsPort: ports[3 * i + 2],
  }));
  const initialCluster = specs.map((s) => `${s.name}=https://127.0.0.1:${s.peerPort}`).join(',');
  const nodes: KubeadmNode[] = [];
  for (const s of specs) {
    const pkiRoot = path.join(s.root, 'etc/kubernetes/pki');
    const pkiDir = path.join(pkiRoot, 'etcd');
    const manifestsDir = path.join(s.root, 'etc/kubernetes/manifests');
    const dataDir = path.join(s.root, 'var/lib/etcd');
    mkdirSync(pkiDir, { recursive: true });
    mkdirSync(manifestsDir, { recursive: true });
    const sans = 'IP:127.0.0.1,DNS:localhost';
    const issued = {
      server: await issueCert(certs, `${s.name}-server`, { cn: s.name, sans }),
      peer: await issueCert(certs, `${s.name}-peer`, { cn: s.name, sans }),
      'healthcheck-client': await issueCert(certs, `${s.name}-hc`, { cn: 'kube-etcd-healthcheck-client', usage: 'client' }),
    };
    for (const [file, c] of Object.entries(issued)) {
      copyFileSync(c.cert, path.join(pkiDir, `${file}.crt`));
      copyFileSync(c.key, path.join(pkiDir, `${file}.key`));
    }
    copyFileSync(certs.ca, path.join(pkiDir, 'ca.crt'));
    copyFileSync(path.join(caDir, 'ca.key'), path.join(pkiDir, 'ca.key'));
    copyFileSync(issued['healthcheck-client'].cert, path.join(pkiRoot, 'apiserver-etcd-client.crt'));
    copyFileSync(issued['healthcheck-client'].key, path.join(pkiRoot, 'apiserver-etcd-client.key'));
    const clientUrl = `https://127.0.0.1:${s.clientPort}`;
    writeFileSync(
      path.join(manifestsDir, 'etcd.yaml'),
      etcdPodManifest({
        name: s.name,
        host: '127.0.0.1',
        clientPort: s.clientPort,
        peerPort: s.peerPort,
        metricsPort: s.metricsPort,
        initialCluster,
        dataDir,
        pkiDir,
      }),
    );
    writeFileSync(path.join(manifestsDir, 'kube-apiserver.yaml'), apiServerPodManifest(clientUrl, pkiRoot));
    nodes.push({
      name: s.name,
      root: s.root,
      manifestsDir,
      pkiDir,
      dataDir,
      clientUrl,
      peerUrl: `https://127.0.0.1:${s.peerPort}`,
      metricsPort: s.metricsPort,
      clientTls: { ca: path.join(pkiDir, 'ca.crt'), cert: path.join(pkiDir, 'healthcheck-client.crt'), key: path.join(pkiDir, 'healthcheck-client.key') },
      kubelet: new KubeletStandIn({
        manifestsDir,
        root: s.root,
        stateDir: path.join(dir, `${s.name}-kubelet`),
        binaries: { 'kube-apiserver': path.join(dir, 'kube-apiserver') },
      }),
    });
  }
  // The API server stand-in: sleeps until stopped, whatever its flags.
  writeFileSync(path.join(dir, 'kube-apiserver'), '#!/bin/sh\nexec sleep 600\n', { mode: 0o755 });
  return nodes;
}
