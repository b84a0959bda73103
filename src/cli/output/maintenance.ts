// alarm / compaction / defrag / move-leader / snapshot save and restore output.
import { hexId, paddedHexId } from '../../client/ids.js';
import type { SnapshotSaved } from '../../client/snapshotSave.js';
import type { AlarmResult, HeaderOnly } from '../../client/types.js';
import type { RestoreResult } from '../../recovery/restore.js';
import type { Renderer } from '../baseCommand.js';
import { humanBytes } from './humanize.js';
import { headerJson } from './json.js';
import { renderTable } from './table.js';

export const alarmOutput: Renderer<AlarmResult> = {
  simple: (r) => r.alarms.map((a) => `memberID:${hexId(a.memberId)} alarm:${a.alarm}`).join('\n'),
  table: (r) =>
    renderTable(
      ['MEMBER ID', 'ALARM'],
      r.alarms.map((a) => [paddedHexId(a.memberId), a.alarm]),
    ),
  json: (r) => ({ header: headerJson(r.header), alarms: r.alarms.map((a) => ({ memberID: a.memberId, alarm: a.alarm })) }),
};

export function compactionOutput(revision: number): Renderer<HeaderOnly> {
  return {
    simple: () => `compacted revision ${revision}`,
    table: () => `compacted revision ${revision}`,
    json: (r) => ({ header: headerJson(r.header), revision }),
  };
}

export interface Defragmented {
  endpoint: string;
  ok: boolean;
  error?: string;
}

export const defragOutput: Renderer<Defragmented[]> = {
  simple: (list) =>
    list
      .filter((d) => d.ok)
      .map((d) => `Finished defragmenting etcd member[${d.endpoint}]`)
      .join('\n'),
  table: (list) =>
    renderTable(
      ['ENDPOINT', 'DEFRAGMENTED', 'ERROR'],
      list.map((d) => [d.endpoint, String(d.ok), d.error ?? '']),
      { right: [1] },
    ),
  json: (list) => list.map((d) => ({ endpoint: d.endpoint, defragmented: d.ok, ...(d.error ? { error: d.error } : {}) })),
};

export interface LeaderMoved {
  from: bigint;
  to: bigint;
  header: HeaderOnly['header'];
}

export const moveLeaderOutput: Renderer<LeaderMoved> = {
  simple: (r) => `Leadership transferred from ${hexId(r.from)} to ${hexId(r.to)}`,
  table: (r) => `Leadership transferred from ${hexId(r.from)} to ${hexId(r.to)}`,
  json: (r) => ({ header: headerJson(r.header), from: r.from, to: r.to }),
};

const mbps = (s: SnapshotSaved) => s.bytesPerSecond / 1e6;

export const snapshotSaveOutput: Renderer<SnapshotSaved> = {
  simple: (s) =>
    [
      `Snapshot saved at ${s.path}`,
      `from ${s.endpoint}: ${humanBytes(s.size)} (${s.size} bytes), revision ${s.revision}, ${s.keyCount} keys`,
      `file sha256 ${s.sha256} (the whole file, trailer included; the trailer's digest of the database was verified)`,
      `took ${s.seconds.toFixed(2)}s, ${mbps(s).toFixed(2)} MB/s`,
    ].join('\n'),
  table: (s) =>
    renderTable(
      ['PATH', 'SIZE', 'REVISION', 'KEYS', 'SHA256', 'SECONDS', 'MB/S'],
      [[s.path, s.size, s.revision, s.keyCount, s.sha256, s.seconds.toFixed(2), mbps(s).toFixed(2)]],
      { right: [1, 2, 3, 5, 6] },
    ),
  json: (s) => ({
    path: s.path,
    endpoint: s.endpoint,
    size: s.size,
    revision: s.revision,
    keyCount: s.keyCount,
    sha256: s.sha256,
    dbSha256: s.dbSha256,
    seconds: Number(s.seconds.toFixed(3)),
    mbPerSecond: Number(mbps(s).toFixed(3)),
  }),
};

export const snapshotRestoreOutput = (r: RestoreResult): string =>
  [
    `Restored ${r.keys} keys at revision ${r.revision} into ${r.dataDir}`,
    `member ${r.memberId} in new cluster ${r.clusterId} (parent ${r.parentClusterId})`,
    ...(r.notCarriedOver ?? []).map((n) => `not carried over: ${n}`),
    'Start it with:',
    `  ${r.serverCommand}`,
  ].join('\n');
