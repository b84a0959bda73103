// kubeadm's etcd static pod manifest (/etc/kubernetes/manifests/etcd.yaml):
// what it says about its member, and the few edits a recovery makes to it.
//
// Edits are splices of the text at the YAML node's own range, never a
// re-serialization: a YAML library writing the document back re-indents
// kubeadm's sequences and folds long flags, and an operator diffing the file
// must see only the lines we changed. Every edit is re-parsed and checked.
import path from 'node:path';
import { isMap, isScalar, isSeq, parseDocument, type Document, type Scalar, type YAMLMap, type YAMLSeq } from 'yaml';
import { InputError } from '../common/errors.js';
import { readConfigFile, tlsFilesOf, type MemberTlsFiles } from '../ops/memberConfigFile.js';

export interface EtcdManifest {
  file: string;
  text: string;
  /** the container's command and args, "--flag=value" split (flags without "=" map to "true") */
  flags: Map<string, string>;
  name: string;
  /** --data-dir, inside the container */
  dataDir: string;
  /** the hostPath volume mounted where the data dir is */
  dataVolume: { name: string; hostPath: string; mountPath: string };
  /** --data-dir on the host: the hostPath plus the data dir's place under the mount */
  hostDataDir: string;
  image: string;
  /** the image's tag ("3.5.9-0"), the etcd version it carries */
  imageTag: string;
  advertiseClientUrls: string[];
  initialAdvertisePeerUrls: string[];
  tls: MemberTlsFiles;
}

interface Located {
  doc: Document.Parsed;
  container: YAMLMap;
  /** command then args: every item, in order */
  items: Scalar[];
}

function fail(file: string, why: string): never {
  throw new InputError(`${file}: ${why}`);
}

function locate(file: string, text: string): Located {
  const doc = parseDocument(text, { keepSourceTokens: true });
  if (doc.errors.length > 0) fail(file, `not YAML: ${doc.errors[0].message.split('\n')[0]}`);
  const containers = doc.getIn(['spec', 'containers'], true);
  if (!isSeq(containers)) fail(file, 'no spec.containers: not a static pod manifest');
  const container = containers.items.find((c) => isMap(c) && c.get('name') === 'etcd') ?? containers.items[0];
  if (!isMap(container)) fail(file, 'no etcd container in spec.containers');
  const items: Scalar[] = [];
  for (const field of ['command', 'args']) {
    const seq = container.get(field, true);
    if (seq === undefined) continue;
    if (!isSeq(seq)) fail(file, `the etcd container's ${field} is not a list`);
    for (const it of seq.items) {
      if (!isScalar(it)) fail(file, `the etcd container's ${field} holds something other than strings`);
      items.push(it);
    }
  }
  return { doc, container, items };
}

function flagsOf(items: Scalar[]): Map<string, string> {
  const flags = new Map<string, string>();
  for (const it of items) {
    const s = String(it.value);
    const m = /^--?([^=]+)(?:=(.*))?$/s.exec(s);
    if (m) flags.set(m[1], m[2] ?? 'true');
  }
  return flags;
}

const within = (dir: string, mount: string) => dir === mount || dir.startsWith(mount.endsWith('/') ? mount : `${mount}/`);

export function parseEtcdManifest(file: string, text: string): EtcdManifest {
  const { doc, container, items } = locate(file, text);
  const flags = flagsOf(items);
  const dataDir = flags.get('data-dir');
  if (!dataDir) fail(file, 'the etcd command has no --data-dir');
  const name = flags.get('name') ?? 'default';
  const mounts = container.get('volumeMounts', true);
  const volumes = doc.getIn(['spec', 'volumes'], true);
  if (!isSeq(mounts) || !isSeq(volumes))
    fail(file, `--data-dir ${dataDir} is not on a volume (no volumeMounts/volumes): its data would be lost with the container`);
  const mount = (mounts as YAMLSeq).items
    .filter(isMap)
    .map((m) => ({ name: String(m.get('name')), mountPath: String(m.get('mountPath')) }))
    .filter((m) => within(dataDir, m.mountPath))
    .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
  if (!mount)
    fail(file, `--data-dir ${dataDir} is under none of the container's volumeMounts: its data would be lost with the container; fix the manifest first`);
  const volume = volumes.items.filter(isMap).find((v) => v.get('name') === mount.name);
  const hostPath = volume?.getIn(['hostPath', 'path']);
  if (typeof hostPath !== 'string')
    fail(
      file,
      `--data-dir ${dataDir} is on volume ${mount.name}, which is not a hostPath volume: the data dir and the host path disagree; fix the manifest first`,
    );
  const imageNode = container.get('image');
  const image = typeof imageNode === 'string' ? imageNode : '';
  const list = (k: string) => (flags.get(k) ?? '').split(',').filter(Boolean);
  return {
    file,
    text,
    flags,
    name,
    dataDir,
    dataVolume: { name: mount.name, hostPath, mountPath: mount.mountPath },
    hostDataDir: path.posix.join(hostPath, path.posix.relative(mount.mountPath, dataDir)),
    image,
    imageTag: image.includes(':') ? image.slice(image.lastIndexOf(':') + 1) : '',
    advertiseClientUrls: list('advertise-client-urls'),
    initialAdvertisePeerUrls: list('initial-advertise-peer-urls'),
    tls: tlsFilesOf(flags),
  };
}

export function readEtcdManifest(file: string): EtcdManifest {
  return parseEtcdManifest(file, readConfigFile(file, 'give the manifests dir that holds etcd.yaml (--manifests-dir)'));
}

export interface ManifestChange {
  /** the new data dir on the host (the data volume's hostPath follows it) */
  hostDataDir?: string;
  /** the new --data-dir inside the container (the volume's mountPath follows it); unchanged when absent */
  containerDataDir?: string;
  /** --initial-cluster */
  initialCluster?: string;
  initialClusterState?: 'new' | 'existing';
}

const FORCE_NEW_CLUSTER = /^--?force-new-cluster(=|$)/;

/** A scalar as YAML text: plain when it reads back as the same string, double-quoted otherwise. */
function scalarText(value: string): string {
  const plain = parseDocument(value).toJS() as unknown;
  return plain === value && !value.includes('\n') ? value : JSON.stringify(value);
}

/**
 * The manifest with `change` applied by splicing each scalar in place; flags it
 * lacks are added after the last item of the command; --force-new-cluster is
 * removed. Throws if the result does not read back as intended.
 */
export function rewriteEtcdManifest(m: EtcdManifest, change: ManifestChange): string {
  const { doc, container, items } = locate(m.file, m.text);
  const splices: Array<{ start: number; end: number; text: string }> = [];
  const setFlag = (flag: string, value: string) => {
    const it = items.find((i) => new RegExp(`^--?${flag}(=|$)`).test(String(i.value)));
    if (it?.range) splices.push({ start: it.range[0], end: it.range[1], text: scalarText(`--${flag}=${value}`) });
    else {
      // After the last item, on a line of its own with the same indentation.
      const last = items.filter((i) => !FORCE_NEW_CLUSTER.test(String(i.value))).at(-1);
      if (!last?.range) fail(m.file, `cannot add --${flag}: the etcd container has no command`);
      const lineStart = m.text.lastIndexOf('\n', last.range[0]) + 1;
      const indent = m.text.slice(lineStart, last.range[0]);
      splices.push({ start: last.range[1], end: last.range[1], text: `\n${indent}${scalarText(`--${flag}=${value}`)}` });
    }
  };
  const containerDir = change.containerDataDir ?? m.dataDir;
  if (change.containerDataDir && change.containerDataDir !== m.dataDir) {
    setFlag('data-dir', change.containerDataDir);
    // The mount moves with the data dir, keeping the dir's place under it.
    const mount = (container.get('volumeMounts') as YAMLSeq).items.filter(isMap).find((v) => v.get('name') === m.dataVolume.name)!;
    const node = mount.get('mountPath', true) as Scalar;
    const rel = path.posix.relative(m.dataVolume.mountPath, m.dataDir);
    const newMount = rel ? path.posix.join(change.containerDataDir, ...rel.split('/').map(() => '..')) : change.containerDataDir;
    splices.push({ start: node.range![0], end: node.range![1], text: scalarText(newMount) });
  }
  if (change.hostDataDir && change.hostDataDir !== m.hostDataDir) {
    const vol = (doc.getIn(['spec', 'volumes']) as YAMLSeq).items.filter(isMap).find((v) => v.get('name') === m.dataVolume.name)!;
    const node = vol.getIn(['hostPath', 'path'], true) as Scalar;
    const rel = path.posix.relative(m.dataVolume.mountPath, m.dataDir);
    const newHost = rel ? path.posix.join(change.hostDataDir, ...rel.split('/').map(() => '..')) : change.hostDataDir;
    splices.push({ start: node.range![0], end: node.range![1], text: scalarText(newHost) });
  }
  if (change.initialCluster) setFlag('initial-cluster', change.initialCluster);
  if (change.initialClusterState) setFlag('initial-cluster-state', change.initialClusterState);
  for (const it of items) {
    if (FORCE_NEW_CLUSTER.test(String(it.value)) && it.range) {
      // The whole "- --force-new-cluster" line goes.
      const lineStart = m.text.lastIndexOf('\n', it.range[0]) + 1;
      const lineEnd = m.text.indexOf('\n', it.range[1]);
      splices.push({ start: lineStart, end: lineEnd < 0 ? m.text.length : lineEnd + 1, text: '' });
    }
  }
  splices.sort((a, b) => b.start - a.start);
  let out = m.text;
  for (const s of splices) out = out.slice(0, s.start) + s.text + out.slice(s.end);
  const back = parseEtcdManifest(m.file, out);
  const want = (what: string, got: string | undefined, expected: string | undefined) => {
    if (expected !== undefined && got !== expected) fail(m.file, `rewriting ${what} gave ${String(got)}, not ${expected}; the manifest was left as it was`);
  };
  want('--data-dir', back.dataDir, containerDir);
  want('the data volume', back.hostDataDir, change.hostDataDir);
  want('--initial-cluster', back.flags.get('initial-cluster'), change.initialCluster);
  want('--initial-cluster-state', back.flags.get('initial-cluster-state'), change.initialClusterState);
  if (back.flags.has('force-new-cluster')) fail(m.file, '--force-new-cluster is still there after the rewrite; the manifest was left as it was');
  return out;
}
