// Decoders for the raft and WAL messages etcd 3.4 writes to its WAL and .snap
// files (raft/raftpb/raft.proto, wal/walpb/record.proto, etcdserverpb Metadata,
// snap/snappb). They are proto2 with non-nullable fields, so every scalar is on
// the wire even when zero; the decoders accept either.
//
//   raftpb.Entry            type=1 (0 normal, 1 conf change, 2 conf change v2), term=2, index=3, data=4
//   raftpb.HardState        term=1, vote=2, commit=3
//   raftpb.ConfChange       id=1, type=2 (0 add node, 1 remove, 2 update, 3 add learner), node_id=3, context=4
//   raftpb.ConfChangeV2     transition=1, changes=2 {type=1, node_id=2}, context=3
//   raftpb.Snapshot         data=1, metadata=2 {conf_state=1 {voters=1, learners=2,
//                           voters_outgoing=3, learners_next=4, auto_leave=5}, index=2, term=3}
//   walpb.Snapshot          index=1, term=2
//   etcdserverpb.Metadata   NodeID=1, ClusterID=2 (the WAL's metadata record)
//   snappb.Snapshot         crc=1, data=2 (a .snap file)

import { ProtoReader } from '../common/protobufWire.js';

export interface EtcdEntry {
  type: number;
  term: number;
  index: number;
  data: Buffer;
}

export interface EtcdHardState {
  term: number;
  vote: bigint;
  commit: number;
}

export interface EtcdConfChange {
  type: number;
  nodeId: bigint;
  context: Buffer;
}

export interface EtcdConfState {
  voters: bigint[];
  learners: bigint[];
}

export interface EtcdSnapshotMeta {
  index: number;
  term: number;
  conf: EtcdConfState;
}

export const ENTRY_TYPE = { normal: 0, confChange: 1, confChangeV2: 2 } as const;
export const CONF_CHANGE_TYPE = { addNode: 0, removeNode: 1, updateNode: 2, addLearnerNode: 3 } as const;

const EMPTY = Buffer.alloc(0);

/** Each field of a message, for decoders that keep only a few: (field, wire, reader). */
function forEachField(data: Uint8Array, each: (field: number, wire: number, r: ProtoReader) => boolean): void {
  const r = new ProtoReader(data);
  while (!r.done) {
    const { field, wire } = r.tag();
    if (!each(field, wire, r)) r.skip(wire);
  }
}

/** A repeated uint64 field, packed or not. */
function readUint64s(wire: number, r: ProtoReader, into: bigint[]): void {
  if (wire === 0) {
    into.push(r.uint64());
    return;
  }
  const packed = new ProtoReader(r.bytes());
  while (!packed.done) into.push(packed.uint64());
}

export function decodeEntry(data: Uint8Array): EtcdEntry {
  const e: EtcdEntry = { type: 0, term: 0, index: 0, data: EMPTY };
  forEachField(data, (field, wire, r) => {
    if (field === 1 && wire === 0) e.type = r.uint();
    else if (field === 2 && wire === 0) e.term = r.uint();
    else if (field === 3 && wire === 0) e.index = r.uint();
    else if (field === 4 && wire === 2) e.data = r.bytes();
    else return false;
    return true;
  });
  return e;
}

export function decodeHardState(data: Uint8Array): EtcdHardState {
  const hs: EtcdHardState = { term: 0, vote: 0n, commit: 0 };
  forEachField(data, (field, wire, r) => {
    if (field === 1 && wire === 0) hs.term = r.uint();
    else if (field === 2 && wire === 0) hs.vote = r.uint64();
    else if (field === 3 && wire === 0) hs.commit = r.uint();
    else return false;
    return true;
  });
  return hs;
}

export function decodeConfChange(data: Uint8Array): EtcdConfChange {
  const cc: EtcdConfChange = { type: 0, nodeId: 0n, context: EMPTY };
  forEachField(data, (field, wire, r) => {
    if (field === 2 && wire === 0) cc.type = r.uint();
    else if (field === 3 && wire === 0) cc.nodeId = r.uint64();
    else if (field === 4 && wire === 2) cc.context = r.bytes();
    else return false;
    return true;
  });
  return cc;
}

/** The single changes of a ConfChangeV2 (etcd 3.4 does not write these; read for completeness). */
export function decodeConfChangeV2(data: Uint8Array): Array<{ type: number; nodeId: bigint }> {
  const out: Array<{ type: number; nodeId: bigint }> = [];
  forEachField(data, (field, wire, r) => {
    if (field !== 2 || wire !== 2) return false;
    const c = { type: 0, nodeId: 0n };
    forEachField(r.bytes(), (f, w, s) => {
      if (f === 1 && w === 0) c.type = s.uint();
      else if (f === 2 && w === 0) c.nodeId = s.uint64();
      else return false;
      return true;
    });
    out.push(c);
    return true;
  });
  return out;
}

/** walpb.Snapshot: a snapshot mark in the WAL. */
export function decodeWalSnapshot(data: Uint8Array): { index: number; term: number } {
  const s = { index: 0, term: 0 };
  forEachField(data, (field, wire, r) => {
    if (field === 1 && wire === 0) s.index = r.uint();
    else if (field === 2 && wire === 0) s.term = r.uint();
    else return false;
    return true;
  });
  return s;
}

/** etcdserverpb.Metadata: the member and cluster the WAL belongs to. */
export function decodeWalMetadata(data: Uint8Array): { nodeId: bigint; clusterId: bigint } {
  const m = { nodeId: 0n, clusterId: 0n };
  forEachField(data, (field, wire, r) => {
    if (field === 1 && wire === 0) m.nodeId = r.uint64();
    else if (field === 2 && wire === 0) m.clusterId = r.uint64();
    else return false;
    return true;
  });
  return m;
}

function decodeConfState(data: Uint8Array): EtcdConfState {
  const cs: EtcdConfState = { voters: [], learners: [] };
  forEachField(data, (field, wire, r) => {
    if (field === 1) readUint64s(wire, r, cs.voters);
    else if (field === 2) readUint64s(wire, r, cs.learners);
    else return false;
    return true;
  });
  return cs;
}

/** raftpb.Snapshot: its data (etcd 3.4: the v2 store as JSON) and metadata. */
export function decodeRaftSnapshot(data: Uint8Array): { data: Buffer; meta: EtcdSnapshotMeta } {
  const out: { data: Buffer; meta: EtcdSnapshotMeta } = {
    data: EMPTY,
    meta: { index: 0, term: 0, conf: { voters: [] as bigint[], learners: [] as bigint[] } },
  };
  forEachField(data, (field, wire, r) => {
    if (field === 1 && wire === 2) out.data = r.bytes();
    else if (field === 2 && wire === 2) {
      forEachField(r.bytes(), (f, w, s) => {
        if (f === 1 && w === 2) out.meta.conf = decodeConfState(s.bytes());
        else if (f === 2 && w === 0) out.meta.index = s.uint();
        else if (f === 3 && w === 0) out.meta.term = s.uint();
        else return false;
        return true;
      });
    } else return false;
    return true;
  });
  return out;
}

/** snappb.Snapshot: the framing of a .snap file. */
export function decodeSnapFile(data: Uint8Array): { crc: number; data: Buffer } {
  const out: { crc: number; data: Buffer } = { crc: 0, data: EMPTY };
  forEachField(data, (field, wire, r) => {
    if (field === 1 && wire === 0) out.crc = Number(r.uint64() & 0xffff_ffffn);
    else if (field === 2 && wire === 2) out.data = r.bytes();
    else return false;
    return true;
  });
  return out;
}
