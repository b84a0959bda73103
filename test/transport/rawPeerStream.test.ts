// The raw peer message stream (src/transport/rawPeerStream.ts) against servers of
// our own on 127.0.0.1: a peer that accepts and then answers nothing is dropped,
// one that keeps answering is kept, and one that speaks something else is told apart.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, test } from 'node:test';
import { RAW_PEER_MAGIC, RawPeerClientStream, RawPeerServerCall } from '../../src/transport/rawPeerStream.js';
import { freePorts } from '../support/ports.js';

const ENVELOPE = { cluster_id: '1', from: '2', to: '3', messages: [Buffer.from('m')] };

/** A listener on 127.0.0.1 whose connections go to `onConnection`; closed after the file. */
async function listen(seed: string, onConnection: (s: net.Socket) => void): Promise<number> {
  const [port] = (await freePorts(1, seed)) as [number];
  const server = net.createServer(onConnection);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  after(() => server.close());
  return port;
}

/** A client writing an envelope every 100 ms for up to `ms`; resolves with how it ended. */
function writeFor(port: number, deadAfterMs: number, ms: number): Promise<{ accepted: boolean; error?: string; after: number }> {
  const started = Date.now();
  const socket = net.connect({ host: '127.0.0.1', port });
  socket.write(RAW_PEER_MAGIC);
  const c = new RawPeerClientStream(socket, deadAfterMs);
  return new Promise((resolve) => {
    const timer = setInterval(() => c.write(ENVELOPE), 100);
    const done = (error?: string) => {
      clearInterval(timer);
      clearTimeout(stop);
      socket.destroy();
      resolve({ accepted: c.wasAccepted, error, after: Date.now() - started });
    };
    const stop = setTimeout(() => done(), ms);
    c.on('error', (e: Error) => done(e.message));
    c.on('end', () => done('ended'));
  });
}

describe('raw peer message stream', () => {
  test('a peer that accepts and then answers nothing is dropped; one that keeps answering is kept', async () => {
    const silent = await listen('raw-silent', (s) => {
      s.on('data', () => {}); // reads everything, answers nothing after the magic
      s.write(RAW_PEER_MAGIC);
    });
    const r = await writeFor(silent, 1000, 5000);
    assert.equal(r.accepted, true);
    assert.equal(r.error, 'peer sent nothing for 1 s');
    assert.ok(r.after < 3000, `dropped after ${r.after} ms`);

    const live = await listen('raw-live', (s) => {
      const call = new RawPeerServerCall(s);
      call.sendMetadata();
      call.on('data', () => {});
    });
    // KEEPALIVE_MS (2 s) is above 1 s: the receiver's keepalives alone would not do, so allow 3 s.
    const ok = await writeFor(live, 3000, 5000);
    assert.deepEqual({ accepted: ok.accepted, error: ok.error }, { accepted: true, error: undefined });
  });

  test('envelopes arrive as sent, header fields and messages, when the header changes on the connection', async () => {
    const got: unknown[] = [];
    const want = [
      { cluster_id: '18446744073709551615', from: '12345678901234567890', to: '9007199254740993', messages: [Buffer.from('a'), Buffer.alloc(300, 7)] },
      { cluster_id: '18446744073709551615', from: '12345678901234567890', to: '9007199254740993', messages: [Buffer.from('b')] },
      { cluster_id: '18446744073709551615', from: '12345678901234567890', to: '9007199254740993', messages: [] },
      { cluster_id: '42', from: '12345678901234567890', to: '9007199254740993', messages: [Buffer.from('c')] },
      { cluster_id: '42', from: '12345678901234567890', to: '7', messages: [Buffer.alloc(70_000, 1), Buffer.from('d')] },
      { cluster_id: '18446744073709551615', from: '12345678901234567890', to: '9007199254740993', messages: [Buffer.from('e')] },
    ];
    const port = await listen('raw-headers', (s) => {
      const call = new RawPeerServerCall(s);
      call.sendMetadata();
      call.on('data', (env) => got.push(env));
    });
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.write(RAW_PEER_MAGIC);
    const c = new RawPeerClientStream(socket);
    try {
      for (const env of want) c.write(env);
      for (let i = 0; i < 100 && got.length < want.length; i++) await new Promise((r) => setTimeout(r, 20));
    } finally {
      socket.destroy();
    }
    assert.deepEqual(got, want);
  });

  test('a server that speaks HTTP/2 does not accept the stream', async () => {
    const h2 = await listen('raw-h2', (s) => {
      s.on('data', () => {});
      s.write(Buffer.from('000000040000000000', 'hex')); // an empty SETTINGS frame, as nghttp2 sends first
    });
    const r = await writeFor(h2, 10_000, 3000);
    assert.deepEqual({ accepted: r.accepted, error: r.error }, { accepted: false, error: 'the peer did not accept a raw message stream' });
  });
});
