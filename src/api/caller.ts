// Who a call comes from: the simple token in gRPC metadata `token` (or
// `authorization`, as etcd's gateway sends it), else the common name of the client
// certificate the TLS layer verified (etcd's --client-cert-auth). The member checks it.
import type * as grpc from '#grpc-js';
import { callIdentity } from '../net/tlsTermination.js';

/** Who a call says it is, before the member checks it. */
export interface Caller {
  token?: string;
  /** CN of the client certificate the TLS layer verified (used only without a token, as etcd's --client-cert-auth). */
  commonName?: string;
}

interface CallLike {
  metadata: grpc.Metadata;
  getPeer?: () => string;
  getAuthContext?: () => { sslPeerCertificate?: { subject?: { CN?: string | string[] } } };
}

/** The caller of a unary call or a stream. */
export function callerOf(call: CallLike): Caller {
  const first = (k: string) => {
    const v = call.metadata.get(k)[0];
    return v === undefined ? undefined : String(v);
  };
  const token = first('token') ?? first('authorization');
  let commonName: string | undefined;
  // The member terminates TLS itself (src/net), so grpc-js's auth context is empty: the connection's verified CN comes from there.
  const identity = call.getPeer ? callIdentity(call as { getPeer(): string }) : undefined;
  if (identity?.verified && identity.cn) commonName = identity.cn;
  else {
    try {
      const cn = call.getAuthContext?.().sslPeerCertificate?.subject?.CN;
      commonName = Array.isArray(cn) ? cn[0] : cn;
    } catch {
      commonName = undefined;
    }
  }
  return { token, commonName: commonName || undefined };
}
