// How a data dir's Raft storage is opened (raftStorage.ts open, recoverDataDir.ts).
import type { NodeId } from '../raft/types.js';
import type { FileSystem } from './fileSystem.js';
import type { MemberMeta } from './memberMeta.js';

export interface OpenOptions {
  /** Defaults to the real disk. */
  fs?: FileSystem;
  /** Identity to record in a new data dir (required to create one); checked against an existing one. */
  identity?: MemberMeta;
  /** Refuse a data dir that belongs to another member. */
  expectMemberId?: NodeId;
  /** Roll over to a new segment once one reaches this size (default 64 MiB). */
  segmentBytes?: number;
  /** Grow segment files with zeros in steps of this size, so an fsync rarely has to update the file size (default 4 MiB; 0: never). */
  preallocBytes?: number;
  /** Writes at least this big skip preallocation (default 64 KiB). */
  largeWriteBytes?: number;
  /** Snapshot files to keep (default 2: the newest for the member, the one before for an operator). */
  keepSnapshots?: number;
  /**
   * Inspect without changing anything (recovery planning): no temp-file cleanup,
   * no torn tail cut (it is left out of the state all the same), every write refused.
   * The lock is still taken, so a running member's data dir is never read mid-write
   * (unless `lock` is 'check').
   */
  readOnly?: boolean;
  /**
   * 'take' (default): hold member/lock while open. 'check' (with readOnly only):
   * refuse a running holder but create and remove nothing, so a stale lock stays
   * and the directory is not touched (datadir inspect, recover plan).
   */
  lock?: 'take' | 'check';
}
