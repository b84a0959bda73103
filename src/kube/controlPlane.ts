// A kubeadm node's static pods as the recovery handles them: the manifests it
// moves out of the kubelet's dir (to stop the pods) and back (to start them),
// its etcd.yaml written atomically, the diff an operator sees, and the checks
// made on the node's etcd files (the image's etcd version, the peer certificate).
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { InputError } from '../common/errors.js';
import { fsyncFile } from '../kv/index.js';
import { readEtcdManifest, type EtcdManifest } from './etcdManifest.js';

export const ETCD_MANIFEST = 'etcd.yaml';
export const API_SERVER_MANIFEST = 'kube-apiserver.yaml';
export const KUBEADM_PLAYBOOK = 'recover-kubeadm-control-plane';
export const DEFAULT_MANIFESTS_DIR = '/etc/kubernetes/manifests';
export const KUBE_COMPONENT_MANIFESTS = ['kube-apiserver.yaml', 'kube-controller-manager.yaml', 'kube-scheduler.yaml'];

/**
 * Where the stopped pods' manifests wait: a directory of its own beside the
 * manifests dir, never inside it (the kubelet runs every file there whose name
 * does not start with a dot).
 */
export function stashDirFor(manifestsDir: string): string {
  return path.join(path.dirname(path.resolve(manifestsDir)), `${path.basename(path.resolve(manifestsDir))}-stopped-by-lifeboat`);
}

/** The node's etcd.yaml, wherever it is now: in the manifests dir, or moved aside by an earlier (interrupted) run. */
export function readNodeEtcdManifest(manifestsDir: string): EtcdManifest {
  const stashed = path.join(stashDirFor(manifestsDir), ETCD_MANIFEST);
  const live = path.join(manifestsDir, ETCD_MANIFEST);
  if (!fs.existsSync(live) && fs.existsSync(stashed)) return readEtcdManifest(stashed);
  if (!fs.existsSync(path.resolve(manifestsDir)))
    throw new InputError(`manifests dir ${manifestsDir} does not exist: give the node's static pod dir (--manifests-dir, kubeadm: /etc/kubernetes/manifests)`);
  return readEtcdManifest(live);
}

/**
 * Writes through a dot-prefixed temp file in the same dir and a rename: the kubelet never runs a half-written file.
 * Both fsynced: after a power cut the file is the old text or the new, never empty.
 */
export function writeManifestAtomic(file: string, text: string): void {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.lifeboat-tmp`);
  fs.writeFileSync(tmp, text, { mode: fs.existsSync(file) ? fs.statSync(file).mode & 0o777 : 0o600 });
  fsyncFile(tmp);
  fs.renameSync(tmp, file);
  fsyncFile(path.dirname(path.resolve(file)));
}

export interface Move {
  file: string;
  from: string;
  to: string;
  /** false: it was already there (an interrupted run) */
  moved: boolean;
}

/**
 * Moves the named manifests from one dir to another. A file already at its
 * destination (and gone from its source) counts as moved; one in neither, or
 * different in both, is refused before anything moves.
 */
export function moveManifests(files: readonly string[], from: string, to: string, opts: { optional?: readonly string[] } = {}): Move[] {
  const plan: Move[] = [];
  for (const f of files) {
    const [src, dst] = [path.join(from, f), path.join(to, f)];
    const [inSrc, inDst] = [fs.existsSync(src), fs.existsSync(dst)];
    if (inSrc && inDst && fs.readFileSync(src, 'utf8') !== fs.readFileSync(dst, 'utf8'))
      throw new InputError(`${f} is in both ${from} and ${to}, and they differ: keep the one the node should run and remove the other`);
    if (!inSrc && !inDst) {
      if (opts.optional?.includes(f)) continue;
      throw new InputError(`${src} does not exist (nor ${dst}): give the node's manifests dir`);
    }
    plan.push({ file: f, from: src, to: dst, moved: inSrc });
  }
  fs.mkdirSync(to, { recursive: true, mode: 0o700 });
  for (const m of plan) {
    if (!m.moved) continue;
    if (fs.existsSync(m.to)) fs.rmSync(m.from);
    else fs.renameSync(m.from, m.to);
  }
  return plan;
}

/** The lines that differ, as a unified-style listing (`-` old, `+` new, two lines of context). */
export function manifestDiff(label: string, before: string, after: string): string[] {
  const a = before.split('\n');
  const b = after.split('\n');
  // Longest common subsequence: manifests are a few dozen lines.
  const lcs: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--) lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const ops: Array<[' ' | '-' | '+', string]> = [];
  let [i, j] = [0, 0];
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      ops.push([' ', a[i++]]);
      j++;
    } else if (i < a.length && (j === b.length || lcs[i + 1][j] >= lcs[i][j + 1])) ops.push(['-', a[i++]]);
    else ops.push(['+', b[j++]]);
  }
  const keep = new Set<number>();
  ops.forEach(([op], k) => {
    if (op !== ' ') for (let c = k - 2; c <= k + 2; c++) keep.add(c);
  });
  if (keep.size === 0) return [`${label}: unchanged`];
  const out = [`--- ${label}`, `+++ ${label} (after)`];
  let last = -1;
  for (let k = 0; k < ops.length; k++) {
    if (!keep.has(k)) continue;
    if (last >= 0 && k > last + 1) out.push('@@');
    out.push(`${ops[k][0]}${ops[k][1]}`);
    last = k;
  }
  return out;
}

/**
 * Why the etcd binary cannot stand in for the image's: its major.minor must be
 * the image tag's (kubeadm's "3.5.9-0"); undefined when they match.
 */
export function imageVersionProblem(imageTag: string, binVersion: string, bin: string): string | undefined {
  const tag = /^v?(\d+)\.(\d+)\.(\d+)/.exec(imageTag);
  if (!tag) return undefined; // an image by digest or a custom tag: nothing to compare
  const want = `${tag[1]}.${tag[2]}`;
  if (binVersion.split('.').slice(0, 2).join('.') === want) return undefined;
  return `etcd.yaml runs etcd ${tag[1]}.${tag[2]}.${tag[3]} (image tag ${imageTag}) but ${bin} is etcd ${binVersion}: give the matching binaries with etcd-bin (copy them out of the registry.k8s.io/etcd:${imageTag} image)`;
}

/**
 * Why a member's peer certificate would not let it rejoin (expired, or its SANs
 * miss its peer URL's host: the join then hangs on the TLS handshake), with the
 * command that renews it (kubeadm's by default); undefined when it is good.
 */
export function peerCertProblem(
  certFile: string,
  peerUrl: string,
  renew = 'on that node run: kubeadm init phase certs etcd-peer',
  now = new Date(),
): string | undefined {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(fs.readFileSync(certFile));
  } catch (e) {
    return `peer certificate ${certFile} cannot be read (${(e as Error).message})`;
  }
  if (new Date(cert.validTo) <= now) return `peer certificate ${certFile} expired on ${cert.validTo}: ${renew}`;
  const host = new URL(peerUrl).hostname.replace(/^\[|\]$/g, '');
  const covered = /^[\d.]+$|:/.test(host) ? cert.checkIP(host) !== undefined : cert.checkHost(host) !== undefined;
  if (!covered) return `peer certificate ${certFile} does not name ${host} (its SANs: ${cert.subjectAltName ?? 'none'}), so the rejoin would hang: ${renew}`;
  return undefined;
}

/** kubeadm's etcd client certificate beside the etcd CA (pki/etcd/healthcheck-client.*), when the node has one. */
export function nodeClientTls(m: EtcdManifest): { caFile: string; certFile: string; keyFile: string } | undefined {
  const ca = m.tls.trustedCaFile;
  if (!ca) return undefined;
  const dir = path.dirname(ca);
  const [certFile, keyFile] = [path.join(dir, 'healthcheck-client.crt'), path.join(dir, 'healthcheck-client.key')];
  return fs.existsSync(certFile) && fs.existsSync(keyFile) ? { caFile: ca, certFile, keyFile } : undefined;
}

/**
 * The connection for a recovery run on a kubeadm node: the operator's TLS flags
 * when given, else the node's own etcd client certificate; refused in one line
 * (naming the flags) when etcd serves https and the node has none.
 */
export function withNodeClientTls<C extends { tls?: { caFile?: string; certFile?: string; keyFile?: string } }>(m: EtcdManifest, connection: C): C {
  if (connection.tls) return connection;
  const tls = nodeClientTls(m);
  if (tls) return { ...connection, tls };
  if (m.advertiseClientUrls.some((u) => u.startsWith('https://')))
    throw new InputError(
      `${m.file}: no etcd client certificate beside ${m.tls.trustedCaFile ?? 'its CA'} (healthcheck-client.crt): give --cacert, --cert and --key`,
    );
  return connection;
}

/**
 * `playbook run recover-kubeadm-control-plane` connects as `recover --kubeadm`
 * does: with the node's client certificate unless TLS flags are given. The
 * manifests dir is the run's manifests-dir (--set wins over --vars); left to
 * its default and unreadable, the connection stays as given (the playbook's
 * own check names the problem, or a terminal asks for the dir).
 */
export function kubeadmPlaybookConnection<C extends { tls?: { caFile?: string; certFile?: string; keyFile?: string } }>(
  sets: readonly string[],
  varsFile: string | undefined,
  connection: C,
): C {
  if (connection.tls) return connection;
  const fromSet = sets
    .filter((s) => s.startsWith('manifests-dir='))
    .at(-1)
    ?.slice('manifests-dir='.length);
  let fromVars: unknown;
  if (fromSet === undefined && varsFile !== undefined) {
    try {
      fromVars = (parseYaml(fs.readFileSync(varsFile, 'utf8')) as Record<string, unknown> | null)?.['manifests-dir'];
    } catch {
      fromVars = undefined; // the session reports an unreadable vars file
    }
  }
  const given = fromSet ?? (typeof fromVars === 'string' ? fromVars : undefined);
  let m: EtcdManifest;
  try {
    m = readNodeEtcdManifest(given ?? DEFAULT_MANIFESTS_DIR);
  } catch (e) {
    if (given !== undefined) throw e;
    return connection;
  }
  return withNodeClientTls(m, connection);
}
