// A member's gRPC calls to its peers on our own channel (src/net/grpcClient.ts):
// the identity probe answers, and fails at its deadline when the peer accepts a
// connection but never sets it up; a streaming call ends as soon as the server
// sends its status, even while our side of it is still open.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, test } from 'node:test';
import { GrpcChannel, type MethodCodec } from '../../src/net/grpcClient.js';
import { GrpcServer } from '../../src/net/grpcServer.js';
import { listenWithAuthorityRewrite, type AuthorityRewriteListener } from '../../src/net/authorityListener.js';
import { serviceDefinition } from '../../src/proto/load.js';
import { PeerCredentials, PeerTransport } from '../../src/transport/peerTransport.js';
import type { Ack, Envelope } from '../../src/transport/peerProtocol.js';
import { host } from './transportHost.js';
import { freePorts } from '../support/ports.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('the identity probe answers; against a peer that accepts but never completes TLS it fails at its deadline', async () => {
  const [good, silent] = await freePorts(2, 'peer-calls-identity');
  const t = new PeerTransport(host(2n, 7n, { unreachable: 0, refused: 0 }));
  cleanups.push(() => t.close());
  await t.listen([`http://127.0.0.1:${good}`]);
  const reply = await PeerTransport.identity(`http://127.0.0.1:${good}`, { clusterId: 0n, from: 0n }, 2000);
  assert.deepEqual([reply.cluster_id, reply.member_id], ['7', '2']);

  // Takes the TCP connection and says nothing: the TLS handshake never ends.
  const held: net.Socket[] = [];
  const mute = net.createServer((s) => void held.push(s));
  await new Promise<void>((r) => mute.listen(silent, '127.0.0.1', () => r()));
  cleanups.push(() => {
    for (const s of held) s.destroy();
    mute.close();
  });
  const started = Date.now();
  await assert.rejects(PeerTransport.identity(`https://127.0.0.1:${silent}`, { clusterId: 0n, from: 0n }, 500, new PeerCredentials()), /DEADLINE_EXCEEDED/);
  const took = Date.now() - started;
  assert.ok(took >= 450 && took < 3000, `failed after ${took} ms, not at the 500 ms deadline`);
});

test('a streaming call ends with the server status while our side is still open; an accepted one carries messages', async () => {
  const [port] = await freePorts(1, 'peer-calls-stream');
  const server = new GrpcServer();
  // cluster_id 9: the call fails at once with FAILED_PRECONDITION; otherwise each envelope is acked.
  server.addService(serviceDefinition('lifeboat.peer.Peer'), {
    Stream: (call: { on(ev: 'data', fn: (e: Envelope) => void): void; write(a: Ack): boolean; emit(ev: 'error', e: unknown): boolean }) => {
      call.on('data', (e) => {
        if (e.cluster_id === '9') call.emit('error', { code: 9, details: 'refused here' });
        else call.write({ refused: '', superseded_by: e.cluster_id });
      });
    },
  });
  const listener: AuthorityRewriteListener = await listenWithAuthorityRewrite(server, `127.0.0.1:${port}`);
  const channel = new GrpcChannel(`http://127.0.0.1:${port}`, undefined);
  cleanups.push(async () => {
    channel.close();
    server.forceShutdown();
    await listener.close();
  });
  const method = serviceDefinition('lifeboat.peer.Peer').Stream as unknown as MethodCodec<Envelope, Ack>;
  const envelope = (cluster: string): Envelope => ({ cluster_id: cluster, from: '1', to: '2', messages: [] });

  const accepted = channel.stream(method, 1 << 20);
  const ack = await new Promise<Ack>((resolve, reject) => {
    accepted.once('data', resolve);
    accepted.once('error', reject);
    accepted.write(envelope('5'));
  });
  assert.equal(ack.superseded_by, '5');
  accepted.end();

  const refused = channel.stream(method, 1 << 20);
  const outcome = await new Promise<Error | 'ended' | 'timeout'>((resolve) => {
    const timer = setTimeout(() => resolve('timeout'), 2000);
    refused.once('error', (e: Error) => (clearTimeout(timer), resolve(e)));
    refused.once('end', () => (clearTimeout(timer), resolve('ended')));
    refused.write(envelope('9')); // and never end() our side
  });
  assert.ok(outcome instanceof Error, `the call did not fail: ${String(outcome)}`);
  assert.match(outcome.message, /^9 FAILED_PRECONDITION: refused here$/);
  assert.equal(refused.write(envelope('5')), false, 'a call that has ended takes no more writes');
});
