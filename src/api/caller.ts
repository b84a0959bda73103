// Who a call comes from: the simple token in gRPC metadata `token` (or
// `authorization`, as etcd's gateway sends it), else the common name of the client
// certificate the TLS layer verified (etcd's --client-cert-auth). The member checks it.
import type { CallMetadata } from '../net/serverCalls.js';
import { callIdentity } from '../net/tlsTermination.js';

/** Who a call says it is, before the member checks it. */
export interface Caller {
  token?: string;
  /** CN of the client certificate the TLS layer verified (used only without a token, as etcd's --client-cert-auth). */
  commonName?: string;
}

interface CallLike {
  metadata: CallMetadata;
  getPeer(): string;
}

/** The caller of a unary call or a stream. */
export function callerOf(call: CallLike): Caller {
  const first = (k: string) => {
    const v = call.metadata.get(k)[0];
    return v === undefined ? undefined : String(v);
  };
  const token = first('token') ?? first('authorization');
  // The member terminates TLS itself (src/net): the connection's verified CN comes from there.
  const identity = callIdentity(call);
  return { token, commonName: (identity?.verified && identity.cn) || undefined };
}
