// Static pod manifests laid out as kubeadm (v1.28) writes them, for tests of
// the Kubernetes control-plane recovery: the same keys, order, indentation and
// quoting, so edits can be checked byte for byte against a realistic file.

export interface EtcdPodOptions {
  name: string;
  /** the node's address in URLs (127.0.0.1 in tests) */
  host: string;
  clientPort: number;
  peerPort: number;
  metricsPort: number;
  initialCluster: string;
  dataDir: string;
  pkiDir: string;
  image?: string;
  /** extra command items, written as given (e.g. "--force-new-cluster") */
  extra?: string[];
}

export function etcdPodManifest(o: EtcdPodOptions): string {
  const client = `https://${o.host}:${o.clientPort}`;
  const peer = `https://${o.host}:${o.peerPort}`;
  const cmd = [
    'etcd',
    `--advertise-client-urls=${client}`,
    `--cert-file=${o.pkiDir}/server.crt`,
    '--client-cert-auth=true',
    `--data-dir=${o.dataDir}`,
    '--experimental-initial-corrupt-check=true',
    '--experimental-watch-progress-notify-interval=5s',
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=${o.initialCluster}`,
    `--key-file=${o.pkiDir}/server.key`,
    `--listen-client-urls=https://127.0.0.1:${o.clientPort},${client}`,
    `--listen-metrics-urls=http://127.0.0.1:${o.metricsPort}`,
    `--listen-peer-urls=${peer}`,
    `--name=${o.name}`,
    `--peer-cert-file=${o.pkiDir}/peer.crt`,
    '--peer-client-cert-auth=true',
    `--peer-key-file=${o.pkiDir}/peer.key`,
    `--peer-trusted-ca-file=${o.pkiDir}/ca.crt`,
    '--snapshot-count=10000',
    `--trusted-ca-file=${o.pkiDir}/ca.crt`,
    ...(o.extra ?? []),
  ];
  return `apiVersion: v1
kind: Pod
metadata:
  annotations:
    kubeadm.kubernetes.io/etcd.advertise-client-urls: ${client}
  creationTimestamp: null
  labels:
    component: etcd
    tier: control-plane
  name: etcd
  namespace: kube-system
spec:
  containers:
  - command:
${cmd.map((c) => `    - ${c}`).join('\n')}
    image: ${o.image ?? 'registry.k8s.io/etcd:3.4.23-0'}
    imagePullPolicy: IfNotPresent
    livenessProbe:
      failureThreshold: 8
      httpGet:
        host: 127.0.0.1
        path: /health
        port: ${o.metricsPort}
        scheme: HTTP
      initialDelaySeconds: 10
      periodSeconds: 10
      timeoutSeconds: 15
    name: etcd
    resources:
      requests:
        cpu: 100m
        memory: 100Mi
    volumeMounts:
    - mountPath: ${o.dataDir}
      name: etcd-data
    - mountPath: ${o.pkiDir}
      name: etcd-certs
  hostNetwork: true
  priority: 2000001000
  priorityClassName: system-node-critical
  securityContext:
    seccompProfile:
      type: RuntimeDefault
  volumes:
  - hostPath:
      path: ${o.pkiDir}
      type: DirectoryOrCreate
    name: etcd-certs
  - hostPath:
      path: ${o.dataDir}
      type: DirectoryOrCreate
    name: etcd-data
status: {}
`;
}
