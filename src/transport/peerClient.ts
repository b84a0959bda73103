// The gRPC side of dialling a peer (lifeboat.peer.Peer) on our own HTTP/2
// channel (net/grpcClient.ts): Identity and Forward, and for members that take
// no raw connection the message Stream and SendSnapshot.
import type tls from 'node:tls';
import { GrpcChannel, type ClientStreamCall, type MethodCodec } from '../net/grpcClient.js';
import { serviceDefinition } from '../proto/load.js';
import type { Ack, Envelope, ForwardReply, IdentityReply } from './peerProtocol.js';

/** The largest message taken from a peer, as the gRPC stream's limit (an envelope is at most about 4 MiB). */
const MAX_RECEIVE = 64 << 20;

const method = <Req, Res>(name: string) => serviceDefinition('lifeboat.peer.Peer')[name] as unknown as MethodCodec<Req, Res>;

export class PeerClient {
  private readonly channel: GrpcChannel;

  constructor(url: string, tlsOptions: tls.ConnectionOptions | undefined) {
    this.channel = new GrpcChannel(url, tlsOptions);
  }

  /** The message stream (gRPC's, for a member that takes no raw one). */
  stream(): ClientStreamCall<Envelope, Ack> {
    return this.channel.stream(method<Envelope, Ack>('Stream'), MAX_RECEIVE);
  }

  /** A snapshot's chunks; `done` gets the receiver's one Ack, or the call's error. */
  sendSnapshot(done: (err: Error | null, ack?: Ack) => void): ClientStreamCall<Record<string, unknown>, Ack> {
    const call = this.channel.stream(method<Record<string, unknown>, Ack>('SendSnapshot'), MAX_RECEIVE);
    let ack: Ack | undefined;
    call.on('data', (a: Ack) => (ack ??= a));
    call.on('error', (err: Error) => done(err));
    call.on('end', () => (ack ? done(null, ack) : done(new Error('the peer sent no acknowledgement'))));
    return call;
  }

  identity(req: { cluster_id: string; from: string }, timeoutMs: number): Promise<IdentityReply> {
    return this.channel.unary(method<typeof req, IdentityReply>('Identity'), req, timeoutMs);
  }

  forward(req: { cluster_id: string; from: string; method: string; json: string }, timeoutMs: number): Promise<ForwardReply> {
    return this.channel.unary(method<typeof req, ForwardReply>('Forward'), req, timeoutMs);
  }

  close(): void {
    this.channel.close();
  }
}
