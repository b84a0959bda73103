// kubeadm-shaped control-plane nodes under a temporary root, for tests of the
// Kubernetes recovery: each node has ROOT/NODE/etc/kubernetes/manifests
// (etcd.yaml and kube-apiserver.yaml as kubeadm writes them),
// ROOT/NODE/etc/kubernetes/pki/etcd (one etcd CA; server, peer and
// healthcheck-client certificates per node, made with openssl) and its data
// dir at ROOT/NODE/var/lib/etcd. Run by a KubeletStandIn each.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
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
  /** the API server stand-in's https://127.0.0.1:PORT */
  apiServerUrl: string;
  /** the node's own etcd client certificate (kubeadm's healthcheck-client) */
  clientTls: { ca: string; cert: string; key: string };
  kubelet: KubeletStandIn;
}

/**
 * The API server's static pod as kubeadm writes it (the flags the recovery
 * reads: --advertise-address, --secure-port, its TLS files, the k8s-certs
 * volume); run by the kubelet stand-in as the HTTPS stand-in of
 * apiServerStandIn.ts.
 */
export function apiServerPodManifest(clientUrl: string, pkiRoot: string, securePort: number): string {
  return `apiVersion: v1
kind: Pod
metadata:
  annotations:
    kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint: 127.0.0.1:${securePort}
  labels:
    component: kube-apiserver
    tier: control-plane
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - command:
    - kube-apiserver
    - --advertise-address=127.0.0.1
    - --client-ca-file=${pkiRoot}/ca.crt
    - --etcd-cafile=${pkiRoot}/etcd/ca.crt
    - --etcd-certfile=${pkiRoot}/apiserver-etcd-client.crt
    - --etcd-keyfile=${pkiRoot}/apiserver-etcd-client.key
    - --etcd-servers=${clientUrl}
    - --secure-port=${securePort}
    - --tls-cert-file=${pkiRoot}/apiserver.crt
    - --tls-private-key-file=${pkiRoot}/apiserver.key
    image: registry.k8s.io/kube-apiserver:v1.28.2
    name: kube-apiserver
    volumeMounts:
    - mountPath: ${pkiRoot}
      name: k8s-certs
      readOnly: true
  hostNetwork: true
  volumes:
  - hostPath:
      path: ${pkiRoot}
      type: DirectoryOrCreate
    name: k8s-certs
status: {}
`;
}

/** The controller manager's or scheduler's static pod: a stand-in that only sleeps, run and stopped as the real one would be. */
export function componentPodManifest(component: 'kube-controller-manager' | 'kube-scheduler'): string {
  return `apiVersion: v1
kind: Pod
metadata:
  labels:
    component: ${component}
    tier: control-plane
  name: ${component}
  namespace: kube-system
spec:
  containers:
  - command:
    - ${component}
    - --kubeconfig=/etc/kubernetes/${component === 'kube-scheduler' ? 'scheduler' : 'controller-manager'}.conf
    - --leader-elect=true
    image: registry.k8s.io/${component}:v1.28.2
    name: ${component}
  hostNetwork: true
status: {}
`;
}

/**
 * Three (or `count`) nodes of one etcd cluster, their pki and manifests (etcd,
 * kube-apiserver; with `components` also the controller manager and scheduler)
 * written; the kubelets not started.
 */
export async function makeKubeadmNodes(
  dir: string,
  count: number,
  portSeed: string,
  freePorts: (n: number, seed: string) => Promise<number[]>,
  opts: { components?: boolean } = {},
): Promise<KubeadmNode[]> {
  const caDir = path.join(dir, 'etcd-ca');
  mkdirSync(caDir, { recursive: true });
  const certs = await makeCerts(caDir);
  const ports = await freePorts(count * 4, portSeed);
  const names = Array.from({ length: count }, (_, i) => `cp${i + 1}`);
  const specs = names.map((name, i) => ({
    name,
    root: path.join(dir, name),
    clientPort: ports[4 * i],
    peerPort: ports[4 * i + 1],
    metricsPort: ports[4 * i + 2],
    apiServerPort: ports[4 * i + 3],
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
    // The API server serves with the node's server certificate (127.0.0.1), signed by the one CA the tests use.
    copyFileSync(certs.ca, path.join(pkiRoot, 'ca.crt'));
    copyFileSync(issued.server.cert, path.join(pkiRoot, 'apiserver.crt'));
    copyFileSync(issued.server.key, path.join(pkiRoot, 'apiserver.key'));
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
    writeFileSync(path.join(manifestsDir, 'kube-apiserver.yaml'), apiServerPodManifest(clientUrl, pkiRoot, s.apiServerPort));
    if (opts.components)
      for (const c of ['kube-controller-manager', 'kube-scheduler'] as const) writeFileSync(path.join(manifestsDir, `${c}.yaml`), componentPodManifest(c));
    nodes.push({
      name: s.name,
      root: s.root,
      manifestsDir,
      pkiDir,
      dataDir,
      clientUrl,
      peerUrl: `https://127.0.0.1:${s.peerPort}`,
      metricsPort: s.metricsPort,
      apiServerUrl: `https://127.0.0.1:${s.apiServerPort}`,
      clientTls: { ca: path.join(pkiDir, 'ca.crt'), cert: path.join(pkiDir, 'healthcheck-client.crt'), key: path.join(pkiDir, 'healthcheck-client.key') },
      kubelet: new KubeletStandIn({
        manifestsDir,
        root: s.root,
        stateDir: path.join(dir, `${s.name}-kubelet`),
        binaries: {
          'kube-apiserver': path.join(dir, 'kube-apiserver'),
          'kube-controller-manager': path.join(dir, 'kube-sleeper'),
          'kube-scheduler': path.join(dir, 'kube-sleeper'),
        },
      }),
    });
  }
  const standIn = fileURLToPath(new URL('./apiServerStandIn.js', import.meta.url));
  writeFileSync(path.join(dir, 'kube-apiserver'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(standIn)} "$@"\n`, { mode: 0o755 });
  // The controller manager and scheduler stand-in: sleeps until stopped, whatever its flags.
  writeFileSync(path.join(dir, 'kube-sleeper'), '#!/bin/sh\nexec sleep 600\n', { mode: 0o755 });
  return nodes;
}
