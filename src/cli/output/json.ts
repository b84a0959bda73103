// JSON views of the client's results, mirroring etcdctl -w json: its field names,
// every ID (member, cluster, leader, lease) as the exact uint64 number etcdctl
// writes (a bigint here, written digit for digit by toJson, never through a JS
// number), and keys and values base64-encoded as Go's encoding/json writes bytes.
import type { KeyValue, Member, ResponseHeader, StatusResult } from '../../client/types.js';

export function headerJson(h: ResponseHeader) {
  return { cluster_id: h.clusterId, member_id: h.memberId, revision: h.revision, raft_term: h.raftTerm };
}

export function memberJson(m: Member) {
  return { ID: m.id, name: m.name, peerURLs: m.peerURLs, clientURLs: m.clientURLs, isLearner: m.isLearner };
}

export function kvJson(kv: KeyValue) {
  return {
    key: kv.key.toString('base64'),
    create_revision: kv.createRevision,
    mod_revision: kv.modRevision,
    version: kv.version,
    value: kv.value.toString('base64'),
    lease: kv.lease,
  };
}

export function statusJson(s: StatusResult) {
  return {
    header: headerJson(s.header),
    version: s.version,
    dbSize: s.dbSize,
    leader: s.leader,
    raftIndex: s.raftIndex,
    raftTerm: s.raftTerm,
    raftAppliedIndex: s.raftAppliedIndex,
    errors: s.errors,
    dbSizeInUse: s.dbSizeInUse,
    isLearner: s.isLearner,
  };
}

/**
 * JSON text of `value`, as JSON.stringify writes it, except that every bigint is
 * written as the exact decimal number it holds (etcdctl's uint64 IDs: above 2^53,
 * so they must never pass through a JS number).
 */
export function toJson(value: unknown): string {
  return jsonText(value) ?? 'null';
}

function jsonText(v: unknown): string | undefined {
  if (typeof v === 'bigint') return v.toString();
  if (v === null || typeof v !== 'object') return JSON.stringify(v); // undefined for undefined and functions, as JSON.stringify leaves them out
  const withToJson = v as { toJSON?: () => unknown };
  if (typeof withToJson.toJSON === 'function') return jsonText(withToJson.toJSON());
  if (Array.isArray(v)) return `[${v.map((x: unknown) => jsonText(x) ?? 'null').join(',')}]`;
  const fields: string[] = [];
  for (const [k, x] of Object.entries(v)) {
    const text = jsonText(x);
    if (text !== undefined) fields.push(`${JSON.stringify(k)}:${text}`);
  }
  return `{${fields.join(',')}}`;
}
