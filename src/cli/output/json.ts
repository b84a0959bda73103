// JSON views of the client's results, mirroring etcdctl -w json field names, with
// every ID (member, cluster, leader, lease) as a lowercase hex string and keys and
// values base64-encoded as etcdctl (Go's encoding/json) writes bytes.
import { hexId } from '../../client/ids.js';
import type { KeyValue, Member, ResponseHeader, StatusResult } from '../../client/types.js';

export function headerJson(h: ResponseHeader) {
  return { cluster_id: hexId(h.clusterId), member_id: hexId(h.memberId), revision: h.revision, raft_term: h.raftTerm };
}

export function memberJson(m: Member) {
  return { ID: hexId(m.id), name: m.name, peerURLs: m.peerURLs, clientURLs: m.clientURLs, isLearner: m.isLearner };
}

export function kvJson(kv: KeyValue) {
  return {
    key: kv.key.toString('base64'),
    create_revision: kv.createRevision,
    mod_revision: kv.modRevision,
    version: kv.version,
    value: kv.value.toString('base64'),
    lease: hexId(kv.lease),
  };
}

export function statusJson(s: StatusResult) {
  return {
    header: headerJson(s.header),
    version: s.version,
    dbSize: s.dbSize,
    leader: hexId(s.leader),
    raftIndex: s.raftIndex,
    raftTerm: s.raftTerm,
    raftAppliedIndex: s.raftAppliedIndex,
    errors: s.errors,
    dbSizeInUse: s.dbSizeInUse,
    isLearner: s.isLearner,
  };
}

/** JSON.stringify that writes any bigint left in a value as a hex ID. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? hexId(v) : v));
}
