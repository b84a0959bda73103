// `snapshot status`, as etcdctl prints it first: hash (hex in text, the uint32 in
// JSON), revision, total keys and total size (humanized in simple and table, bytes
// in JSON: `{"hash":N,"revision":N,"totalKey":N,"totalSize":N}`); then what
// Lifeboat adds (the trailer, the cluster and members it came from).
import type { EtcdFileStatus, SnapshotStatus } from '../../recovery/snapshotFormat.js';
import type { Renderer } from '../baseCommand.js';
import { humanBytes } from './humanize.js';
import { renderTable } from './table.js';

/** etcdctl's line: `e0072d68, 202, 205, 41 kB`. */
const etcdctlLine = (s: SnapshotStatus) => `${s.hash}, ${s.revision}, ${s.totalKeys}, ${humanBytes(s.totalSize)}`;

/** Every restore (Lifeboat or etcd, into either runtime) keeps the file's users, roles and auth switch. */
const authLine = (s: SnapshotStatus) => (s.authEnabled ? ['authentication enabled (kept by restore: log in as a user of the snapshot)'] : []);

const memberLine = (m: SnapshotStatus['members'][number]) =>
  `member ${m.id.padStart(16, '0')} ${m.name || '(unstarted)'} ${m.peerURLs.join(',')}${m.isLearner ? ' learner' : ''}`;

export const snapshotStatusOutput: Renderer<SnapshotStatus> = {
  simple: (s) =>
    s.etcd
      ? etcdLines(s, s.etcd).join('\n')
      : [
          etcdctlLine(s),
          `database sha256 ${s.sha256} (the trailer's digest of the database, verified)`,
          `cluster ${s.clusterId}${s.parentClusterId ? ` (parent ${s.parentClusterId})` : ''}, applied index ${s.appliedIndex}`,
          ...s.members.map(memberLine),
          ...authLine(s),
        ].join('\n'),
  table: (s) =>
    renderTable(['HASH', 'REVISION', 'TOTAL KEYS', 'TOTAL SIZE'], [[s.hash, String(s.revision), String(s.totalKeys), humanBytes(s.totalSize)]], {
      right: [0, 1, 2, 3],
    }),
  // etcdctl's four fields with etcdctl's names and types first; ours after them.
  json: (s) => {
    const { hash, revision, totalKeys, totalSize, ...rest } = s;
    return { hash: Number.parseInt(hash, 16), revision, totalKey: totalKeys, totalSize, ...rest };
  },
};

function etcdLines(s: SnapshotStatus, e: EtcdFileStatus): string[] {
  const trailer =
    e.trailer === 'verified'
      ? `database sha256 ${s.sha256} (the trailer's digest of the database, verified)`
      : e.trailer === 'absent'
        ? 'no sha256 trailer (a raw member/snap/db; restore needs --skip-hash-check)'
        : `sha256 trailer WRONG: stored ${e.storedSha256}, computed ${s.sha256} (restore will refuse it)`;
  return [
    etcdctlLine(s),
    `etcd backend${e.clusterVersion ? ` (cluster version ${e.clusterVersion})` : ''}: ${e.liveKeys} live keys, ${e.storedRevisions} stored revisions, compacted at ${e.compactRevision}, ${e.leases} leases, consistent index ${s.appliedIndex}`,
    trailer,
    `cluster ${s.clusterId} (${e.clusterIdDerived})`,
    ...s.members.map(memberLine),
    ...(e.removedMembers.length > 0 ? [`removed members ${e.removedMembers.join(', ')}`] : []),
    ...e.alarms.map((a) => `alarm ${a.alarm} on member ${a.memberId}`),
    ...authLine(s),
    ...(e.otherMetaInvalid ? [`warning: read meta page ${e.metaPage}; ${e.otherMetaInvalid}`] : []),
  ];
}
