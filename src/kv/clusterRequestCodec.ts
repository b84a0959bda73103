// The member's own cluster requests, in etcd's InternalRaftRequest fields and
// messages: alarm=10: AlarmRequest{action=1 (GET=0, ACTIVATE=1, DEACTIVATE=2),
// memberID=2, alarm=3 (AlarmType)}; a member publishing its name and client URLs,
// cluster_member_attr_set=1301: ClusterMemberAttrSetRequest{member_ID=1,
// member_attributes=2 {name=1, client_urls=2}} (etcd 3.5's publish).
// Lifeboat wrote both with JSON bodies before (alarm=10, and publish in field 20,
// which etcd does not use): entries in that form, in logs written then, still decode.

import { parseId } from '../common/ids.js';
import { ProtoReader, type ProtoWriter } from '../common/protobufWire.js';
import type { AlarmType } from './types.js';

export type AlarmAction = 'ACTIVATE' | 'DEACTIVATE';

export type ClusterRequest =
  { publish: { memberId: bigint; name: string; clientURLs: string[] } } | { alarm: { action: AlarmAction; memberId: bigint; alarm: AlarmType } };

const F = { alarm: 10, jsonPublish: 20, memberAttrSet: 1301 } as const;

/** AlarmRequest.AlarmAction; GET only reads, so it is never proposed here. */
const ACTIONS: Record<number, AlarmAction> = { 1: 'ACTIVATE', 2: 'DEACTIVATE' };
const ACTION_NUMBERS: Record<AlarmAction, number> = { ACTIVATE: 1, DEACTIVATE: 2 };

/** Writes the request as its InternalRaftRequest field, as etcd encodes it. */
export function writeClusterRequest(w: ProtoWriter, request: ClusterRequest): void {
  if ('publish' in request) {
    const p = request.publish;
    w.message(F.memberAttrSet, (m) =>
      m.int(1, p.memberId).message(2, (a) => {
        a.string(1, p.name);
        for (const url of p.clientURLs) a.bytesAlways(2, Buffer.from(url, 'utf8'));
      }),
    );
  } else {
    const a = request.alarm;
    w.message(F.alarm, (m) => m.int(1, ACTION_NUMBERS[a.action]).int(2, a.memberId).int(3, a.alarm));
  }
}

/** Whether an InternalRaftRequest field holds one of these requests (read it with readClusterRequest). */
export function isClusterField(field: number): boolean {
  return field === F.alarm || field === F.jsonPublish || field === F.memberAttrSet;
}

/** The request in InternalRaftRequest field `field`; undefined for an alarm that changes nothing (GET). */
export function readClusterRequest(field: number, data: Uint8Array): ClusterRequest | undefined {
  if (field === F.memberAttrSet) return readMemberAttrSet(data);
  if (field === F.jsonPublish) return jsonPublish(data);
  if (field !== F.alarm) return undefined;
  // '{' (field 15 as a group) never starts an AlarmRequest: a JSON body.
  return data[0] === 0x7b ? jsonAlarm(data) : readAlarm(data);
}

function readAlarm(data: Uint8Array): ClusterRequest | undefined {
  const r = new ProtoReader(data);
  const a = { action: 0, memberId: 0n, alarm: 0 };
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1) a.action = r.uint();
    else if (field === 2) a.memberId = r.uint64();
    else if (field === 3) a.alarm = r.uint();
    else r.skip(wire);
  }
  const action = ACTIONS[a.action];
  return action && { alarm: { action, memberId: a.memberId, alarm: a.alarm } };
}

function readMemberAttrSet(data: Uint8Array): ClusterRequest {
  const r = new ProtoReader(data);
  const p = { memberId: 0n, name: '', clientURLs: [] as string[] };
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1) p.memberId = r.uint64();
    else if (field === 2) {
      const a = new ProtoReader(r.bytes());
      while (!a.done) {
        const t = a.tag();
        if (t.field === 1) p.name = a.string();
        else if (t.field === 2) p.clientURLs.push(a.string());
        else a.skip(t.wire);
      }
    } else r.skip(wire);
  }
  return { publish: p };
}

// --- The JSON bodies of earlier versions (decoded only)

function jsonPublish(data: Uint8Array): ClusterRequest {
  const j = JSON.parse(utf8(data)) as { id: string; name: string; clientURLs: string[] };
  return { publish: { memberId: parseId(j.id), name: j.name, clientURLs: j.clientURLs } };
}

function jsonAlarm(data: Uint8Array): ClusterRequest {
  const j = JSON.parse(utf8(data)) as { action: AlarmAction; memberId: string; alarm: AlarmType };
  return { alarm: { action: j.action, memberId: parseId(j.memberId), alarm: j.alarm } };
}

function utf8(data: Uint8Array): string {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8');
}
