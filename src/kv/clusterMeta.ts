// Cluster state the server keeps inside the KV database, so that it changes in the
// same transaction as the applies that decide it and travels in every snapshot:
// cluster IDs, members (and removed members), lease records, alarms, and a small
// name → bytes table for anything else (the auth state among it: authStore.ts).
// What every request reads (the name → bytes table, alarms, removed members) is
// also held in memory: every write goes through this object, and KvStore drops
// the copies when a transaction rolls back (invalidate) and opens a new object on
// a replaced file (snapshot install, restore), so they never differ from the table.

import type Database from 'better-sqlite3';
import { formatIdPadded, parseId } from '../common/ids.js';
import { AlarmType, type Alarm, type LeaseRecord, type Member } from './types.js';

export interface ClusterMetaReader {
  getMeta(name: string): Buffer | undefined;
  /** Names in the name → bytes table that start with `prefix`, in byte order. */
  metaNames(prefix: string): string[];
  clusterId(): bigint | undefined;
  /**
   * The member whose data dir holds this file, so that a kv.db copied from another
   * member is refused. Undefined in stores written before it was recorded; whoever
   * installs a snapshot (which carries the sender's) records its own.
   */
  memberId(): bigint | undefined;
  /** The cluster this one was recovered from (recovery gives a new cluster ID). */
  parentClusterId(): bigint | undefined;
  members(): Member[];
  member(id: bigint): Member | undefined;
  /** IDs removed from the cluster; a removed member stays removed. */
  removedMembers(): bigint[];
  isRemovedMember(id: bigint): boolean;
  leases(): LeaseRecord[];
  lease(id: bigint): LeaseRecord | undefined;
  alarms(): Alarm[];
  /** Whether any member has this alarm active (read on every write: NOSPACE). */
  hasAlarm(alarm: AlarmType): boolean;
}

export interface ClusterMetaWriter extends ClusterMetaReader {
  setMeta(name: string, value: Uint8Array): void;
  deleteMeta(name: string): void;
  setClusterId(id: bigint): void;
  setMemberId(id: bigint): void;
  setParentClusterId(id: bigint | undefined): void;
  /** Adds or replaces the member with this ID. */
  putMember(m: Member): void;
  /** Returns false when there was no such member. */
  deleteMember(id: bigint): boolean;
  /** Forgets every member (recovery builds a fresh one-member cluster). */
  clearMembers(): void;
  addRemovedMember(id: bigint): void;
  putLease(l: LeaseRecord): void;
  deleteLease(id: bigint): boolean;
  /** Returns false when the alarm was already active. */
  activateAlarm(a: Alarm): boolean;
  /** Returns false when the alarm was not active. */
  deactivateAlarm(a: Alarm): boolean;
}

const CLUSTER_ID = 'cluster_id';
const MEMBER_ID = 'member_id';
const PARENT_CLUSTER_ID = 'parent_cluster_id';

/** uint64 member IDs as 16 hex digits, so text order is numeric order. */
export function idText(id: bigint): string {
  if (id < 0n || id > 0xffff_ffff_ffff_ffffn) throw new RangeError(`member ID ${id} is not a uint64`);
  return formatIdPadded(id);
}

function idBytes(id: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(id);
  return b;
}

interface MemberRow {
  id: string;
  name: string;
  peer_urls: string;
  client_urls: string;
  is_learner: number;
}

function toMember(r: MemberRow): Member {
  return {
    id: parseId(r.id),
    name: r.name,
    peerURLs: JSON.parse(r.peer_urls) as string[],
    clientURLs: JSON.parse(r.client_urls) as string[],
    isLearner: r.is_learner !== 0,
  };
}

function statements(db: Database.Database) {
  const p = (sql: string) => db.prepare(sql);
  return {
    getMeta: p(`SELECT value FROM meta WHERE name = ?`).pluck(),
    setMeta: p(`INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value`),
    deleteMeta: p(`DELETE FROM meta WHERE name = ?`),
    metaNames: p(`SELECT name FROM meta WHERE substr(name, 1, ?) = ? ORDER BY name`).pluck(),
    members: p(`SELECT * FROM members ORDER BY id`),
    member: p(`SELECT * FROM members WHERE id = ?`),
    putMember: p(`INSERT OR REPLACE INTO members (id, name, peer_urls, client_urls, is_learner) VALUES (?, ?, ?, ?, ?)`),
    deleteMember: p(`DELETE FROM members WHERE id = ?`),
    clearMembers: p(`DELETE FROM members`),
    removed: p(`SELECT id FROM removed_members ORDER BY id`).pluck(),
    isRemoved: p(`SELECT 1 FROM removed_members WHERE id = ?`).pluck(),
    addRemoved: p(`INSERT OR IGNORE INTO removed_members (id) VALUES (?)`),
    // Lease IDs are int64, often beyond 2^53: read as text.
    leases: p(`SELECT CAST(id AS TEXT) AS id, ttl FROM leases ORDER BY id`),
    lease: p(`SELECT CAST(id AS TEXT) AS id, ttl FROM leases WHERE id = ?`),
    putLease: p(`INSERT OR REPLACE INTO leases (id, ttl) VALUES (?, ?)`),
    deleteLease: p(`DELETE FROM leases WHERE id = ?`),
    alarms: p(`SELECT member_id, alarm FROM alarms ORDER BY member_id, alarm`),
    activateAlarm: p(`INSERT OR IGNORE INTO alarms (member_id, alarm) VALUES (?, ?)`),
    deactivateAlarm: p(`DELETE FROM alarms WHERE member_id = ? AND alarm = ?`),
  };
}

export class ClusterMeta implements ClusterMetaWriter {
  private readonly s: ReturnType<typeof statements>;
  /** Rows of the name → bytes table read so far (null: no such row). */
  private readonly metaRows = new Map<string, Buffer | null>();
  /** Active alarms in the table's order; undefined until first read. */
  private alarmRows: Alarm[] | undefined;
  /** Removed member IDs; undefined until first read. */
  private removedIds: Set<bigint> | undefined;
  /** 64-bit ID rows decoded, by the row's bytes (peer traffic asks for the cluster ID per envelope). */
  private readonly decodedIds = new WeakMap<Buffer, bigint>();

  constructor(db: Database.Database) {
    this.s = statements(db);
  }

  /** Set once the store lost applies the cluster saw (KvStore.storeLost): the records refuse. */
  private lost: Error | undefined;

  /** Forgets what was read: a transaction rolled back, so the table may hold less than we wrote. */
  invalidate(): void {
    this.metaRows.clear();
    this.alarmRows = undefined;
    this.removedIds = undefined;
  }

  /**
   * The tables went back to before applies the cluster saw, for good: members,
   * leases and alarms, which clients read, refuse from now on with `e`. The IDs
   * and the removed-member fence, which the member's own peer traffic reads until
   * it has stopped, still answer.
   */
  lose(e: Error): void {
    this.lost ??= e;
    this.invalidate();
  }

  private usable(): void {
    if (this.lost) throw this.lost;
  }

  /** The returned bytes are shared: read them, never change them. */
  getMeta(name: string): Buffer | undefined {
    let v = this.metaRows.get(name);
    if (v === undefined) {
      v = (this.s.getMeta.get(name) as Buffer | undefined) ?? null;
      this.metaRows.set(name, v);
    }
    return v ?? undefined;
  }

  metaNames(prefix: string): string[] {
    return this.s.metaNames.all(prefix.length, prefix) as string[];
  }

  setMeta(name: string, value: Uint8Array): void {
    const b = Buffer.from(value);
    this.metaRows.delete(name);
    this.s.setMeta.run(name, b);
    // A copy: the caller may reuse its bytes.
    this.metaRows.set(name, Buffer.from(b));
  }

  deleteMeta(name: string): void {
    this.metaRows.delete(name);
    this.s.deleteMeta.run(name);
    this.metaRows.set(name, null);
  }

  /** An 8-byte ID row as a bigint, decoded once per row read. */
  private idRow(name: string): bigint | undefined {
    const b = this.getMeta(name);
    if (!b) return undefined;
    let id = this.decodedIds.get(b);
    if (id === undefined) this.decodedIds.set(b, (id = b.readBigUInt64BE()));
    return id;
  }

  clusterId(): bigint | undefined {
    return this.idRow(CLUSTER_ID);
  }

  setClusterId(id: bigint): void {
    this.setMeta(CLUSTER_ID, idBytes(id));
  }

  memberId(): bigint | undefined {
    return this.idRow(MEMBER_ID);
  }

  setMemberId(id: bigint): void {
    this.setMeta(MEMBER_ID, idBytes(id));
  }

  parentClusterId(): bigint | undefined {
    return this.idRow(PARENT_CLUSTER_ID);
  }

  setParentClusterId(id: bigint | undefined): void {
    if (id === undefined) this.deleteMeta(PARENT_CLUSTER_ID);
    else this.setMeta(PARENT_CLUSTER_ID, idBytes(id));
  }

  members(): Member[] {
    this.usable();
    return (this.s.members.all() as MemberRow[]).map(toMember);
  }

  member(id: bigint): Member | undefined {
    this.usable();
    const r = this.s.member.get(idText(id)) as MemberRow | undefined;
    return r && toMember(r);
  }

  putMember(m: Member): void {
    this.s.putMember.run(idText(m.id), m.name, JSON.stringify(m.peerURLs), JSON.stringify(m.clientURLs), m.isLearner ? 1 : 0);
  }

  deleteMember(id: bigint): boolean {
    return this.s.deleteMember.run(idText(id)).changes > 0;
  }

  clearMembers(): void {
    this.s.clearMembers.run();
  }

  removedMembers(): bigint[] {
    return (this.s.removed.all() as string[]).map((h) => parseId(h));
  }

  isRemovedMember(id: bigint): boolean {
    this.removedIds ??= new Set(this.removedMembers());
    return this.removedIds.has(id);
  }

  addRemovedMember(id: bigint): void {
    this.removedIds = undefined;
    this.s.addRemoved.run(idText(id));
  }

  leases(): LeaseRecord[] {
    this.usable();
    return (this.s.leases.all() as { id: string; ttl: number }[]).map((r) => ({ id: BigInt(r.id), ttl: r.ttl }));
  }

  lease(id: bigint): LeaseRecord | undefined {
    this.usable();
    const r = this.s.lease.get(id) as { id: string; ttl: number } | undefined;
    return r && { id: BigInt(r.id), ttl: r.ttl };
  }

  putLease(l: LeaseRecord): void {
    this.s.putLease.run(l.id, l.ttl);
  }

  deleteLease(id: bigint): boolean {
    return this.s.deleteLease.run(id).changes > 0;
  }

  alarms(): Alarm[] {
    return this.activeAlarms().map((a) => ({ ...a }));
  }

  hasAlarm(alarm: AlarmType): boolean {
    return this.activeAlarms().some((a) => a.alarm === alarm);
  }

  private activeAlarms(): Alarm[] {
    this.usable();
    this.alarmRows ??= (this.s.alarms.all() as { member_id: string; alarm: AlarmType }[]).map((r) => ({
      memberId: parseId(r.member_id),
      alarm: r.alarm,
    }));
    return this.alarmRows;
  }

  activateAlarm(a: Alarm): boolean {
    this.alarmRows = undefined;
    return this.s.activateAlarm.run(idText(a.memberId), a.alarm).changes > 0;
  }

  deactivateAlarm(a: Alarm): boolean {
    this.alarmRows = undefined;
    return this.s.deactivateAlarm.run(idText(a.memberId), a.alarm).changes > 0;
  }
}
