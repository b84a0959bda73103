// Errors from reading an etcd (bbolt) file: one line each, naming the file, the
// page and the byte offset where the damage is, and what to do next. The reader
// raises nothing else for a malformed file: no RangeError, no assertion.

const ADVICE = 'the file is damaged; use another snapshot or member/snap/db copy';

/** A structural fault in the bbolt file: a bad meta page, a page out of range, a cycle, a malformed element. */
export class BoltFormatError extends Error {
  constructor(
    readonly file: string,
    readonly detail: string,
    readonly pageId?: number,
    readonly offset?: number,
  ) {
    const where =
      pageId === undefined
        ? offset === undefined
          ? ''
          : ` at byte offset ${offset}`
        : ` (page ${pageId}${offset === undefined ? '' : `, byte offset ${offset}`})`;
    super(`etcd db ${file}: ${detail}${where}; ${ADVICE}`);
    this.name = 'BoltFormatError';
  }
}

/** A well-formed bbolt file whose etcd contents are not what etcd writes (a bad revision key, a KeyValue that does not decode). */
export class EtcdDataError extends Error {
  constructor(
    readonly file: string,
    readonly detail: string,
    readonly pageId?: number,
    readonly offset?: number,
  ) {
    const where = pageId === undefined ? '' : ` (page ${pageId}${offset === undefined ? '' : `, byte offset ${offset}`})`;
    super(`etcd db ${file}: ${detail}${where}; ${ADVICE}`);
    this.name = 'EtcdDataError';
  }
}

/** True for the errors a damaged etcd file produces. */
export function isEtcdFileError(err: unknown): err is BoltFormatError | EtcdDataError {
  return err instanceof BoltFormatError || err instanceof EtcdDataError;
}
