// put / get / del output, as etcdctl prints it: simple is key and value lines.
import { hexId } from '../../client/ids.js';
import type { DeleteResult, KeyValue, PutResult, RangeResult } from '../../client/types.js';
import type { Renderer } from '../baseCommand.js';
import { headerJson, kvJson } from './json.js';
import { renderTable } from './table.js';

const kvLines = (kv: KeyValue) => `${kv.key.toString('utf8')}\n${kv.value.toString('utf8')}`;

const kvTable = (kvs: KeyValue[]) =>
  renderTable(
    ['KEY', 'VALUE', 'CREATE REVISION', 'MOD REVISION', 'VERSION', 'LEASE'],
    kvs.map((kv) => [
      kv.key.toString('utf8'),
      kv.value.toString('utf8'),
      kv.createRevision,
      kv.modRevision,
      kv.version,
      kv.lease === 0n ? '' : hexId(kv.lease),
    ]),
    { right: [2, 3, 4] },
  );

export const putOutput: Renderer<PutResult> = {
  simple: (r) => (r.prevKv ? `OK\n${kvLines(r.prevKv)}` : 'OK'),
  table: (r) => (r.prevKv ? `OK\n${kvTable([r.prevKv])}` : 'OK'),
  json: (r) => (r.prevKv ? { header: headerJson(r.header), prev_kv: kvJson(r.prevKv) } : { header: headerJson(r.header) }),
};

export function getOutput(opts: { countOnly?: boolean; keysOnly?: boolean }): Renderer<RangeResult> {
  return {
    simple: (r) => {
      if (opts.countOnly) return String(r.count);
      // etcdctl prints the key, then the value line (empty with --keys-only).
      return r.kvs.map((kv) => (opts.keysOnly ? `${kv.key.toString('utf8')}\n` : kvLines(kv))).join('\n');
    },
    table: (r) => (opts.countOnly ? renderTable(['COUNT'], [[r.count]], { right: [0] }) : kvTable(r.kvs)),
    json: (r) => ({ header: headerJson(r.header), kvs: r.kvs.map(kvJson), more: r.more, count: r.count }),
  };
}

export const deleteOutput: Renderer<DeleteResult> = {
  simple: (r) => [String(r.deleted), ...r.prevKvs.map(kvLines)].join('\n'),
  table: (r) => (r.prevKvs.length > 0 ? `${r.deleted}\n${kvTable(r.prevKvs)}` : String(r.deleted)),
  json: (r) => ({ header: headerJson(r.header), deleted: r.deleted, prev_kvs: r.prevKvs.map(kvJson) }),
};
