// The store's refusals, as the store says them (etcd's mvcc and lease packages).
// They are outcomes, not bugs: shared frozen instances, compared by identity (or
// by `kind` across a thread boundary). The gRPC edge (src/api/errors.ts) maps
// each kind to the code and text clients see; the store knows no gRPC.

export type KvErrorKind = 'compacted' | 'futureRev' | 'keyNotFound' | 'leaseNotFound';

export class KvError extends Error {
  constructor(
    readonly kind: KvErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'KvError';
  }
}

// Typed as the class, not Object.freeze's Readonly<…>, so `throw ErrX` is an Error to the type checker.
const e = (kind: KvErrorKind, message: string): KvError => Object.freeze(new KvError(kind, message));

export const ErrCompacted = e('compacted', 'mvcc: required revision has been compacted');
export const ErrFutureRev = e('futureRev', 'mvcc: required revision is a future revision');
export const ErrKeyNotFound = e('keyNotFound', 'key not found');
export const ErrLeaseNotFound = e('leaseNotFound', 'lease not found');

const BY_KIND: ReadonlyMap<KvErrorKind, KvError> = new Map([ErrCompacted, ErrFutureRev, ErrKeyNotFound, ErrLeaseNotFound].map((x) => [x.kind, x]));

/** The shared instance of `kind` (errors cross the read worker's thread boundary by kind). */
export function kvErrorOf(kind: KvErrorKind): KvError {
  return BY_KIND.get(kind)!;
}
