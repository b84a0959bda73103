// Damage found in an etcd data dir's WAL or .snap files: one line naming the file
// and the byte offset, what is wrong there, and what to do next. A torn tail of the
// newest segment is not an error (etcd repairs it at start); it is reported apart.

const ADVICE = 'the WAL is damaged; recover from another member or a snapshot (lifeboat recover plan)';

export class EtcdWalError extends Error {
  constructor(
    readonly file: string,
    readonly offset: number,
    readonly detail: string,
  ) {
    super(`etcd WAL ${file} at byte offset ${offset}: ${detail}; ${ADVICE}`);
    this.name = 'EtcdWalError';
  }
}
