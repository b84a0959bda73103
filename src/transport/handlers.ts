// The server side of the peer service (lifeboat.peer.Peer): the message stream
// (envelopes from strangers answered with a refusal, one ack per accepted
// stream, malformed messages dropped and logged), SendSnapshot (received by
// snapshotStream.ts), Identity and Forward. Contact with peers is reported
// through PeerContact; everything else goes to the TransportHost.
import { GrpcCode } from '../net/grpcCode.js';
import type { ServiceHandlers } from '../net/grpcServer.js';
import type { Reply, StreamingCall } from '../net/serverCalls.js';
import { decodeMessage } from '../raft/codec.js';
import type { Message, NodeId } from '../raft/types.js';
import {
  partitioned,
  REFUSED_MISMATCH,
  refusal,
  removedRefusal,
  type Ack,
  type Envelope,
  type ForwardReply,
  type IdentityReply,
  type TransportHost,
} from './peerProtocol.js';
import { receiveSnapshot } from './snapshotStream.js';

/** What the handlers tell the connection side about peers reaching us. */
export interface PeerContact {
  /** A welcome peer was heard from (a batch or a stored snapshot). */
  heard(id: NodeId): void;
  /** The peer's stream to us broke or ended. */
  forget(id: NodeId): void;
  /** The peer reached us, so it is listening: our side may stop backing off. */
  peerIsUp(id: NodeId): void;
}

export function peerHandlers(host: TransportHost, contact: PeerContact): ServiceHandlers {
  return {
    Stream: (call: EnvelopeCall) => onStream(host, contact, call),
    SendSnapshot: (call: StreamingCall, cb: Reply<Ack>) => receiveSnapshot(host, (id) => contact.heard(id), call, cb),
    Identity: (call: { request: { cluster_id: string; from: string } }, cb: Reply<IdentityReply>) => {
      try {
        cb(null, host.identity({ clusterId: BigInt(call.request.cluster_id || '0'), from: BigInt(call.request.from || '0') }));
      } catch (e) {
        // The member list refuses once the store lost applies (the member is stopping).
        cb({ code: GrpcCode.Unavailable, details: (e as Error).message });
      }
    },
    Forward: (call: { request: { cluster_id: string; method: string; json: string } }, cb: Reply<ForwardReply>) => {
      if (BigInt(call.request.cluster_id || '0') !== host.clusterId()) {
        cb(null, { json: '', error_code: GrpcCode.FailedPrecondition, error_message: REFUSED_MISMATCH });
        return;
      }
      host.forward(call.request.method, call.request.json).then(
        (r) => cb(null, r),
        (e: Error) => cb(null, { json: '', error_code: GrpcCode.Unknown, error_message: e.message }),
      );
    },
  };
}

/** What the message stream handler uses of its call: a gRPC stream's, or a raw connection's (rawPeerStream.ts). */
export interface EnvelopeCall {
  sendMetadata(): void;
  write(ack: Ack): boolean;
  end(): void;
  on(event: 'data', fn: (env: Envelope) => void): unknown;
  on(event: 'error' | 'end', fn: () => void): unknown;
}

/** The message stream from one peer: envelopes in, an ack or a refusal out. */
export function onStream(host: TransportHost, contact: PeerContact, call: EnvelopeCall): void {
  call.sendMetadata();
  let warned = false;
  let acked = false;
  let sender: NodeId | undefined;
  // The envelope fields accepted last on this stream, with our cluster ID then: while
  // neither changes, the cluster IDs are not compared again, only the sender's removal checked.
  let accepted: { cluster: string; from: string; ours: bigint; id: NodeId } | undefined;
  call.on('data', (env: Envelope) => {
    const known = accepted !== undefined && env.cluster_id === accepted.cluster && env.from === accepted.from && host.clusterId() === accepted.ours;
    const from = known && accepted ? accepted.id : BigInt(env.from);
    const no = known ? removedRefusal(host, from) : refusal(host, BigInt(env.cluster_id), from);
    accepted = no ? undefined : known ? accepted : { cluster: env.cluster_id, from: env.from, ours: host.clusterId(), id: from };
    if (no) {
      const clusterId = BigInt(env.cluster_id);
      if (!warned) {
        warned = true;
        host.logEvent('warn', no.refused === REFUSED_MISMATCH ? 'cluster ID mismatch' : `refused messages from ${no.refused}`, {
          peer: from.toString(16),
          remoteCluster: clusterId.toString(16),
          localCluster: host.clusterId().toString(16),
        });
      }
      call.write(no);
      return;
    }
    if (partitioned('from', from)) return;
    contact.heard(from);
    contact.peerIsUp(from);
    sender = from;
    // One ack per stream tells the sender its messages are delivered (it resets its backoff).
    if (!acked) {
      acked = true;
      call.write({ refused: '', superseded_by: '0' });
    }
    for (const b of env.messages) {
      let m: Message;
      try {
        m = decodeMessage(b);
      } catch (e) {
        host.logEvent('warn', 'dropped a malformed peer message', { peer: from.toString(16), error: (e as Error).message });
        continue;
      }
      host.deliver(m);
    }
  });
  call.on('error', () => {
    if (sender !== undefined) contact.forget(sender);
  });
  call.on('end', () => {
    if (sender !== undefined) contact.forget(sender);
    call.end();
  });
}
