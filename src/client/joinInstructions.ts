// Phase 2 of a runtime member add: the settings the new member must start with,
// built from MemberAdd's response as etcdctl builds its ETCD_* block.
import { memberCommandLine, memberEnvironment, type RuntimeName } from '../common/memberCommand.js';
import type { Member } from './types.js';

export interface JoinInstructions {
  /** <P>_NAME, <P>_INITIAL_CLUSTER, <P>_INITIAL_ADVERTISE_PEER_URLS, <P>_INITIAL_CLUSTER_STATE in order (P: ETCD or LIFEBOAT) */
  env: Array<[string, string]>;
  /** the matching `lifeboat server …` or `etcd …` command line, complete enough to run as printed */
  command: string;
  initialCluster: string;
  peerURLs: string[];
  clientURLs: string[];
  dataDir: string;
}

export interface JoinOptions {
  /** the new member's client URLs; default: each peer URL's scheme and host on port 2379 */
  clientURLs?: readonly string[];
  /** default: `<name>.etcd`, the server's own default, spelled out */
  dataDir?: string;
  /** which member the cluster runs: ETCD_* and `etcd …` for etcd (default lifeboat) */
  runtime?: RuntimeName;
}

/** etcd's convention: clients on 2379 of the host that serves peers on 2380. */
export function defaultClientUrls(peerURLs: readonly string[]): string[] {
  const out = peerURLs.map((u) => {
    const p = new URL(u);
    p.port = '2379';
    return `${p.protocol}//${p.host}`;
  });
  return [...new Set(out)];
}

/**
 * `members` is the membership after the add (MemberAdd's `members`); the new
 * member gets `name`. Members not yet started have no name and are skipped, as
 * etcdctl skips them: the new member's --initial-cluster cannot name them.
 */
export function joinInstructions(name: string, newMember: Member, members: readonly Member[], opts: JoinOptions = {}): JoinInstructions {
  const entries: string[] = [];
  const all = members.some((m) => m.id === newMember.id) ? members : [...members, newMember];
  for (const m of all) {
    const n = m.id === newMember.id ? name : m.name;
    if (!n) continue;
    for (const url of m.peerURLs) entries.push(`${n}=${url}`);
  }
  const initialCluster = entries.join(',');
  const peerURLs = newMember.peerURLs;
  const runtime = opts.runtime ?? 'lifeboat';
  // etcdctl's block: the four settings the cluster decides.
  const env = memberEnvironment(runtime, [
    ['name', name],
    ['initial-cluster', initialCluster],
    ['initial-advertise-peer-urls', peerURLs.join(',')],
    ['initial-cluster-state', 'existing'],
  ]);
  const clientURLs = opts.clientURLs?.length ? [...opts.clientURLs] : defaultClientUrls(peerURLs);
  const dataDir = opts.dataDir ?? `${name}.etcd`;
  // Every flag whose server default (localhost:2379/2380, <name>.etcd) would be
  // wrong or implicit for a joining member, so the line runs as printed.
  const command = memberCommandLine(runtime, [
    ['name', name],
    ['data-dir', dataDir],
    ['listen-peer-urls', peerURLs.join(',')],
    ['initial-advertise-peer-urls', peerURLs.join(',')],
    ['listen-client-urls', clientURLs.join(',')],
    ['advertise-client-urls', clientURLs.join(',')],
    ['initial-cluster', initialCluster],
    ['initial-cluster-state', 'existing'],
  ]);
  return { env, command, initialCluster, peerURLs: [...peerURLs], clientURLs, dataDir };
}
