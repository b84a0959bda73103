// Apply of committed entries, in log order, one SQLite transaction per batch:
// KV requests, the member's own requests (publish, lease grant/revoke, alarm) and
// membership changes. Entries kv.db already holds are skipped (etcd's consistent
// index). Each proposer's outcome is handed back only after the whole batch is
// committed, and then the side effects run (lease timers, peers, logs), in order.
// Past the space quota, writes fail with ErrNoSpace until the alarm is disarmed.
// With auth on, a client's request is checked here against the user and auth
// revision its entry carries (etcd's authApplierV3), so every member decides alike.
// A snapshot from the leader replaces kv.db whole (installLeaderSnapshot).
import fs from 'node:fs';
import { ErrNoSpace } from '../common/memberErrors.js';
import { crashAt } from '../common/failpoint.js';
import {
  applyAuthRequest,
  AuthState,
  decodeRequest,
  kvRequestRefusal,
  KvStore,
  leaseRevokeRefusal,
  moveSnapshotIntoPlaceSync,
  snapshotTrailerStripped,
  stripSnapshotTrailerSync,
  type AuthApplyResult,
  type AuthInfo,
  type AuthRequest,
  type KvWriter,
} from '../kv/index.js';
import { AlarmType, type Alarm, type KvApplyResult, type KvRequest, type Member as MemberInfo } from '../kv/types.js';
import { decodeConfChange } from '../raft/confChange.js';
import { EntryType, type ConfChange, type Entry, type Snapshot } from '../raft/types.js';
import { kvPath } from '../storage/layout.js';
import { formatId } from '../common/ids.js';
import type { Logger } from './logger.js';
import { decodeMemberContext } from './membership.js';
import { incomingSnapshotFile, referencedFile, removeReceivedSnapshots } from './receivedSnapshots.js';

/**
 * How a member opens kv.db: checkpoints from its worker (Member.start), and applies
 * held in one transaction for up to 200 ms: the log replays what a crash loses.
 * Measured against a commit per batch, and 200 against 50 ms: see the commit that
 * set it (git log -S commitDelayMs) and bench/results/ (random keys dirty the same
 * interior pages in every commit).
 */
export const MEMBER_KV_OPTIONS = { autoCheckpoint: false, commitDelayMs: 200 } as const;

/** What a proposer learns once its entry is applied. */
export type ApplyOutcome = { kv?: KvApplyResult; members?: MemberInfo[]; member?: MemberInfo; error?: Error; token?: string };

/** The member's side of applied auth changes: its in-memory simple tokens. */
export interface AuthApply {
  afterAuth(r: AuthApplyResult): void;
}

/** The lease side of applying grants and revocations (Leases). */
export interface LeaseApply {
  applyGrant(w: KvWriter, id: bigint, ttl: number): Error | undefined;
  afterGrant(id: bigint, ttl: number): void;
  applyRevoke(w: KvWriter, id: bigint): Error | undefined;
  afterRevoke(id: bigint, found: boolean): void;
}

export interface ApplyHost {
  readonly memberId: bigint;
  readonly log: Logger;
  readonly leases: LeaseApply;
  readonly auth: AuthApply;
  kv(): KvStore;
  /** The proposer of request `id` gets its outcome (the batch is committed). */
  resolve(id: bigint, outcome: ApplyOutcome): void;
  /** After a batch of `count` entries and its side effects. */
  afterBatch(count: number): void;
  /** A membership change was applied: the peers to talk to may differ. */
  membersChanged(): void;
  /** This member's own removal was applied. */
  removed(): void;
}

export class EntryApplier {
  constructor(private readonly host: ApplyHost) {}

  applyEntries(entries: Entry[]): void {
    const kv = this.host.kv();
    const outcomes: Array<[bigint, ApplyOutcome]> = [];
    const events: Array<() => void> = [];
    // kv.db may be ahead of the log's commit index (a power cut kept a checkpoint
    // but not the unsynced hard state that moved the commit): entries it already
    // holds are skipped, as etcd skips those at or below its consistent index.
    const applied = kv.appliedIndex();
    kv.batch(() => {
      for (const e of entries) {
        if (e.index <= applied) this.skipApplied(kv, e, applied, events);
        else if (e.type === EntryType.ConfChange) this.applyConfChange(kv, e, outcomes, events);
        else this.applyNormal(kv, e, outcomes, events);
      }
    });
    for (const [id, o] of outcomes) this.host.resolve(id, o);
    for (const ev of events) ev();
    this.host.afterBatch(entries.length);
  }

  /** An entry kv.db already holds: nothing to apply; a membership change still updates the peers. */
  private skipApplied(kv: KvStore, e: Entry, applied: number, events: Array<() => void>): void {
    if (e.index === applied && e.term !== kv.appliedTerm()) {
      throw new Error(
        `kv: entry ${e.index} has term ${e.term}, but kv.db applied index ${applied} at term ${kv.appliedTerm()}: the raft log and kv.db disagree`,
      );
    }
    if (e.type !== EntryType.ConfChange) return;
    const cc = decodeConfChange(e.data);
    events.push(() => this.afterConfChange(cc, kv.cluster.member(cc.nodeId)));
  }

  private applyNormal(kv: KvStore, e: Entry, outcomes: Array<[bigint, ApplyOutcome]>, events: Array<() => void>): void {
    if (e.data.length === 0) {
      kv.apply(e.index, e.term, () => undefined);
      return;
    }
    const { id, kv: request, server, header } = decodeRequest(e.data);
    if (server && 'auth' in server) {
      outcomes.push([id, this.applyAuth(kv, e.index, e.term, server.auth, header, events)]);
      return;
    }
    if (server) {
      const outcome: ApplyOutcome = {};
      const leases = this.host.leases;
      kv.apply(e.index, e.term, (w) => {
        if ('publish' in server) {
          const m = w.cluster.member(server.publish.memberId);
          if (m) w.cluster.putMember({ ...m, name: server.publish.name, clientURLs: server.publish.clientURLs });
        } else if ('leaseGrant' in server) {
          const { id: lease, ttl } = server.leaseGrant;
          outcome.error = leases.applyGrant(w, lease, ttl);
          if (!outcome.error) events.push(() => leases.afterGrant(lease, ttl));
        } else if ('leaseRevoke' in server) {
          const lease = server.leaseRevoke.id;
          // A client's revocation needs write access to the lease's keys; the leader's expiry carries no header.
          const refused = header && leaseRevokeRefusal(new AuthState(w.cluster), header, kv.leaseKeys(lease));
          if (refused) {
            outcome.error = refused;
          } else {
            outcome.error = leases.applyRevoke(w, lease);
            const found = !outcome.error;
            events.push(() => leases.afterRevoke(lease, found));
          }
        } else if (server.alarm.action === 'ACTIVATE') {
          if (w.cluster.activateAlarm({ memberId: server.alarm.memberId, alarm: server.alarm.alarm })) {
            events.push(() => this.host.log.warn({ alarm: AlarmType[server.alarm.alarm], member: formatId(server.alarm.memberId) }, 'alarm raised'));
          }
        } else {
          w.cluster.deactivateAlarm({ memberId: server.alarm.memberId, alarm: server.alarm.alarm });
        }
      });
      outcomes.push([id, outcome]);
      return;
    }
    let noSpace = false;
    let refused: Error | undefined;
    const result = kv.apply(e.index, e.term, (w) => {
      if (!request) return undefined;
      if (header && (refused = kvRequestRefusal(new AuthState(w.cluster), header, request, (l) => kv.leaseKeys(l)))) return undefined;
      if ((noSpace = spaceExceeded(request, w.cluster.alarms()))) return undefined;
      return w.request(request);
    });
    if (refused) outcomes.push([id, { error: refused }]);
    else if (noSpace) outcomes.push([id, { error: ErrNoSpace }]);
    else if (result) outcomes.push([id, { kv: result }]);
  }

  /** An auth request: all but authenticate need the root role (etcd's needAdminPermission). */
  private applyAuth(kv: KvStore, index: number, term: number, req: AuthRequest, header: AuthInfo | undefined, events: Array<() => void>): ApplyOutcome {
    let r: AuthApplyResult = {};
    kv.apply(index, term, (w) => {
      const refused = 'authenticate' in req ? undefined : new AuthState(w.cluster).adminPermitted(header);
      r = refused ? { error: refused } : applyAuthRequest(w.cluster, req, index);
    });
    if (r.error) return { error: r.error };
    const done = r;
    events.push(() => this.host.auth.afterAuth(done));
    if ('authEnable' in req || 'authDisable' in req) {
      events.push(() => this.host.log.info({}, 'authEnable' in req ? 'enabled authentication' : 'disabled authentication'));
    }
    return { token: r.token?.token };
  }

  private applyConfChange(kv: KvStore, e: Entry, outcomes: Array<[bigint, ApplyOutcome]>, events: Array<() => void>): void {
    const cc = decodeConfChange(e.data);
    const ctx = cc.context.length > 0 ? decodeMemberContext(cc.context) : undefined;
    const reqId = ctx?.reqId ?? 0n;
    let changed: MemberInfo | undefined;
    kv.apply(e.index, e.term, (w) => {
      const existing = w.cluster.member(cc.nodeId);
      switch (cc.type) {
        case 'addVoter':
        case 'addLearner':
          if (ctx) w.cluster.putMember((changed = { ...ctx.member, isLearner: cc.type === 'addLearner' }));
          break;
        case 'promote':
          if (existing) w.cluster.putMember((changed = { ...existing, isLearner: false }));
          break;
        case 'remove':
          w.cluster.deleteMember(cc.nodeId);
          w.cluster.addRemovedMember(cc.nodeId);
          break;
        case 'update':
          if (existing && ctx) w.cluster.putMember((changed = { ...existing, peerURLs: ctx.member.peerURLs }));
          break;
      }
    });
    const members = kv.cluster.members();
    outcomes.push([reqId, { members, member: changed }]);
    events.push(() => this.afterConfChange(cc, changed));
  }

  private afterConfChange(cc: ConfChange, changed: MemberInfo | undefined): void {
    const log = this.host.log;
    const fields = { id: formatId(cc.nodeId), peerURLs: changed?.peerURLs };
    if (cc.type === 'addVoter' || cc.type === 'addLearner') log.info({ ...fields, learner: cc.type === 'addLearner' }, 'added member');
    else if (cc.type === 'remove') log.info(fields, 'removed member');
    else if (cc.type === 'promote') log.info(fields, 'promoted member');
    else log.info(fields, 'updated member');
    this.host.membersChanged();
    if (cc.type === 'remove' && cc.nodeId === this.host.memberId) this.host.removed();
  }
}

/** Past the quota, writes fail until space is freed and the alarm disarmed (etcd's NOSPACE). */
export function spaceExceeded(req: KvRequest, alarms: Alarm[]): boolean {
  if (!alarms.some((a) => a.alarm === AlarmType.NoSpace)) return false;
  return 'put' in req || ('txn' in req && (req.txn.success?.length ?? 0) + (req.txn.failure?.length ?? 0) > 0);
}

/** Whether the leader should raise the NOSPACE alarm: kv.db outgrew the quota and no such alarm is active. */
export function quotaNewlyExceeded(kv: KvStore, quotaBackendBytes: number): boolean {
  if (quotaBackendBytes <= 0 || kv.dbSize() <= quotaBackendBytes) return false;
  return !kv.cluster.hasAlarm(AlarmType.NoSpace);
}

/**
 * Installs the leader's snapshot (its whole KV state, received into a file) as
 * this member's kv.db: closes `current` and returns the store opened on it.
 */
export function installLeaderSnapshot(s: Snapshot, current: KvStore, dataDir: string, memberId: bigint, log: Logger): KvStore {
  let file = referencedFile(dataDir, s.data);
  // A file our transport received was checked against the sender's bytes on arrival.
  const checked = file !== undefined;
  if (!file) {
    // Data held in memory (not from our transport): put it in a file first.
    file = incomingSnapshotFile(dataDir, 0n);
    fs.writeFileSync(file, s.data);
  }
  log.info({ index: s.meta.index, term: s.meta.term, bytes: fs.statSync(file).size }, 'applying snapshot from leader');
  // Failpoints: die with the snapshot recorded by Raft, at each step of its install.
  if (__LIFEBOAT_FAULTS__) crashAt('snapshot-install:before');
  current.close();
  stripSnapshotTrailerSync(file, { checked });
  if (__LIFEBOAT_FAULTS__) crashAt('snapshot-install:stripped');
  return placeSnapshot(file, dataDir, memberId, !checked);
}

/**
 * Finishes an install a crash interrupted after the trailer was cut off: the file
 * is moved into place as kv.db (it was checked before the cut). Before the cut the
 * restart installs the file as any snapshot; once moved, checkKvIdentity accepts
 * the sender's member ID in it (installedFrom).
 */
export function finishInterruptedInstall(dataDir: string, snap: Snapshot | undefined, memberId: bigint, log: Logger): void {
  const file = snap && referencedFile(dataDir, snap.data);
  if (!file || !fs.existsSync(file) || !snapshotTrailerStripped(file)) return;
  log.warn({ index: snap.meta.index, file }, 'finishing the install of a snapshot from the leader that a crash interrupted');
  placeSnapshot(file, dataDir, memberId, true).close();
}

/** The last step of an install: the bare database moves into place and becomes this member's. */
function placeSnapshot(file: string, dataDir: string, memberId: bigint, quickCheck: boolean): KvStore {
  const dbPath = kvPath(dataDir);
  moveSnapshotIntoPlaceSync(file, dbPath);
  if (__LIFEBOAT_FAULTS__) crashAt('snapshot-install:moved');
  removeReceivedSnapshots(dataDir, file);
  const kv = KvStore.open(dbPath, { ...MEMBER_KV_OPTIONS, quickCheck });
  // It carries the leader's member ID: the file is ours now.
  kv.writeLocal((c) => c.setMemberId(memberId));
  return kv;
}
