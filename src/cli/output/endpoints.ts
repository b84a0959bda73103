// endpoint status / health / hashkv output, as etcdctl prints it.
import { formatElapsed } from '../../common/durations.js';
import { hexId, paddedHexId } from '../../client/ids.js';
import type { HashKVResult, StatusResult } from '../../client/types.js';
import type { Renderer } from '../baseCommand.js';
import { humanBytes } from './humanize.js';
import { headerJson, statusJson } from './json.js';
import { renderTable } from './table.js';

export interface EndpointStatus {
  endpoint: string;
  status: StatusResult;
}

const statusRow = ({ endpoint, status: s }: EndpointStatus, id: (i: bigint) => string) => [
  endpoint,
  id(s.header.memberId),
  s.version,
  humanBytes(s.dbSize),
  String(s.leader !== 0n && s.leader === s.header.memberId),
  String(s.isLearner),
  String(s.raftTerm),
  String(s.raftIndex),
  String(s.raftAppliedIndex),
  s.errors.join(', '),
];

export const endpointStatusOutput: Renderer<EndpointStatus[]> = {
  simple: (list) => list.map((e) => statusRow(e, hexId).join(', ')).join('\n'),
  table: (list) =>
    renderTable(
      ['ENDPOINT', 'ID', 'VERSION', 'DB SIZE', 'IS LEADER', 'IS LEARNER', 'RAFT TERM', 'RAFT INDEX', 'RAFT APPLIED INDEX', 'ERRORS'],
      list.map((e) => statusRow(e, paddedHexId)),
      { right: [4, 5, 6, 7, 8] },
    ),
  json: (list) => list.map((e) => ({ Endpoint: e.endpoint, Status: statusJson(e.status) })),
};

export interface EndpointHealth {
  endpoint: string;
  health: boolean;
  tookMs: number;
  error?: string;
}

export const healthLine = (h: EndpointHealth) =>
  h.health
    ? `${h.endpoint} is healthy: successfully committed proposal: took = ${formatElapsed(h.tookMs)}`
    : `${h.endpoint} is unhealthy: failed to commit proposal: ${h.error ?? 'unknown error'}`;

/** Healthy endpoints only: unhealthy ones go to stderr as errors. */
export const endpointHealthOutput: Renderer<EndpointHealth[]> = {
  simple: (list) =>
    list
      .filter((h) => h.health)
      .map(healthLine)
      .join('\n'),
  table: (list) =>
    renderTable(
      ['ENDPOINT', 'HEALTH', 'TOOK', 'ERROR'],
      list.map((h) => [h.endpoint, String(h.health), formatElapsed(h.tookMs), h.error ?? '']),
      { right: [1] },
    ),
  json: (list) => list.map((h) => ({ endpoint: h.endpoint, health: h.health, took: formatElapsed(h.tookMs), ...(h.error ? { error: h.error } : {}) })),
};

export interface EndpointHashKV {
  endpoint: string;
  hashKV: HashKVResult;
}

export const endpointHashKVOutput: Renderer<EndpointHashKV[]> = {
  simple: (list) => list.map((e) => `${e.endpoint}, ${e.hashKV.hash}`).join('\n'),
  table: (list) =>
    renderTable(
      ['ENDPOINT', 'HASH', 'COMPACT REVISION'],
      list.map((e) => [e.endpoint, e.hashKV.hash, e.hashKV.compactRevision]),
      { right: [1, 2] },
    ),
  json: (list) =>
    list.map((e) => ({
      Endpoint: e.endpoint,
      HashKV: { header: headerJson(e.hashKV.header), hash: e.hashKV.hash, compact_revision: e.hashKV.compactRevision },
    })),
};
