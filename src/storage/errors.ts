// Errors an operator reads: one line each, saying what is wrong and what to do next.

import { formatId } from '../common/ids.js';

export class StorageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StorageError';
  }
}

/** The command that rebuilds a member from a healthy survivor or a snapshot. */
export function recoveryHint(dataDir: string): string {
  return `rebuild this member from a healthy member or a snapshot: lifeboat recover plan --from-data-dir ${dataDir}`;
}

/**
 * Damage the member must not start from: a bad checksum, a truncated or foreign
 * file, a missing segment. Never raised for a torn tail of the newest segment
 * (that is cut off with a warning: it was never acknowledged).
 */
export class StorageCorruptError extends StorageError {
  constructor(
    readonly dataDir: string,
    readonly file: string,
    readonly offset: number,
    readonly detail: string,
  ) {
    super(`data dir ${dataDir} is damaged: ${file} at offset ${offset}: ${detail}; ${recoveryHint(dataDir)}`);
    this.name = 'StorageCorruptError';
  }
}

export class DataDirLockedError extends StorageError {
  constructor(
    readonly dataDir: string,
    /** 0 when the holder cannot be told (an etcd member's OFD lock names no process). */
    readonly pid: number,
    /** Who holds it, when not a pid: e.g. "a running etcd (lock on FILE)". */
    holder?: string,
  ) {
    super(`data dir ${dataDir} is locked by ${holder ?? `pid ${pid}`} (a member is running); stop it first`);
    this.name = 'DataDirLockedError';
  }
}

export class MemberMismatchError extends StorageError {
  constructor(
    readonly dataDir: string,
    readonly kind: 'member' | 'cluster',
    readonly actual: bigint,
    readonly expected: bigint,
  ) {
    super(`data dir ${dataDir} belongs to ${kind} ${formatId(actual)}, not ${formatId(expected)}`);
    this.name = 'MemberMismatchError';
  }
}
