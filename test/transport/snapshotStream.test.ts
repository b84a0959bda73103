// Snapshots between peers: streamed from the leader's file in chunks (on a raw
// connection, or the SendSnapshot gRPC call), written to a file on the receiving
// side as they arrive, and handed over once the checksum matches and the file is
// durable; a damaged or partial one is discarded, never used.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import * as grpc from '#grpc-js';
import { service } from '../../src/proto/grpcClients.js';
import { encodeMessage } from '../../src/raft/codec.js';
import { MessageType, type Message } from '../../src/raft/types.js';
import { PeerTransport } from '../../src/transport/peerTransport.js';
import { dialRawSnapshot } from '../../src/transport/rawSnapshot.js';
import { crc32c } from '../../src/common/crc32c.js';
import { waitFor } from '../support/lifeboatCluster.js';
import { freePorts } from '../support/ports.js';
import { host } from './transportHost.js';

const transports: PeerTransport[] = [];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-snapstream-'));
after(async () => {
  for (const t of transports) await t.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function snapMessage(from: bigint, to: bigint): Message {
  return {
    type: MessageType.Snap,
    from,
    to,
    term: 3,
    logTerm: 0,
    index: 0,
    entries: [],
    commit: 0,
    reject: false,
    rejectHint: 0,
    snapshot: { meta: { index: 42, term: 3, conf: { voters: [from, to], learners: [] } }, data: new Uint8Array(0) },
  };
}

/** The file's bytes in chunks of at most n, as a store's snapshot hands them out. */
async function* fileChunks(file: string, n: number): AsyncGenerator<Buffer> {
  const data = await fs.promises.readFile(file);
  for (let off = 0; off < data.length; off += n) yield data.subarray(off, off + n);
}

/** A receiver that keeps snapshots in `into` and records what it was handed. */
async function receiver(port: number, delivered: { m: Message; file: string }[], into: string): Promise<PeerTransport> {
  fs.mkdirSync(into, { recursive: true });
  let n = 0;
  const t = new PeerTransport({
    ...host(2n, 7n, { unreachable: 0, refused: 0 }),
    incomingSnapshotFile: () => path.join(into, `in-${++n}.db`),
    snapshotReceived: (m, file) => void delivered.push({ m, file }),
  });
  transports.push(t);
  await t.listen([`http://127.0.0.1:${port}`]);
  return t;
}

test("a snapshot of several chunks arrives whole in a file, with its metadata; the sender's file is handed back", async () => {
  const [port] = await freePorts(1, 'snapshot-stream-ok');
  const delivered: { m: Message; file: string }[] = [];
  const into = path.join(dir, 'ok');
  await receiver(port, delivered, into);
  const file = path.join(dir, 'snap.db');
  const data = randomBytes(3 * (1 << 20) + 12345); // four 1 MiB chunks, the last one short
  fs.writeFileSync(file, data);
  let released = false;
  let sent: boolean | undefined;
  const sender = new PeerTransport({
    ...host(1n, 7n, { unreachable: 0, refused: 0 }),
    snapshotData: (m) => Promise.resolve({ message: m, chunks: (n) => fileChunks(file, n), done: () => void (released = true) }),
    snapshotSent: (_peer, ok) => void (sent = ok),
  });
  transports.push(sender);
  sender.setPeers(new Map([[2n, [`http://127.0.0.1:${port}`]]]));
  sender.send([snapMessage(1n, 2n)]);
  const deadline = Date.now() + 30_000;
  while ((sent === undefined || delivered.length === 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  assert.equal(sent, true, 'the sender was not told the snapshot arrived');
  assert.equal(delivered.length, 1);
  assert.equal(delivered[0].m.snapshot!.meta.index, 42);
  assert.ok(fs.readFileSync(delivered[0].file).equals(data), 'the received file differs from the sent one');
  assert.deepEqual(fs.readdirSync(into), [path.basename(delivered[0].file)], 'no temporary file is left');
  assert.ok(released, 'the snapshot file was not handed back');
});

test('a snapshot whose checksum does not match is discarded: DATA_LOSS, nothing delivered', async () => {
  const [port] = await freePorts(1, 'snapshot-stream-bad');
  const delivered: { m: Message; file: string }[] = [];
  const into = path.join(dir, 'bad');
  await receiver(port, delivered, into);
  const Peer = service('lifeboat.peer.Peer');
  const client = new Peer(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>;
  try {
    const err = await new Promise<grpc.ServiceError | null>((resolve) => {
      const call = client.SendSnapshot((e: grpc.ServiceError | null) => resolve(e));
      const base = { cluster_id: '7', from: '1', to: '2' };
      call.write({ ...base, header: Buffer.from(encodeMessage(snapMessage(1n, 2n))), data: Buffer.alloc(0), last: false, crc32c: 0 });
      call.write({ ...base, data: randomBytes(4096), last: false, crc32c: 0 });
      call.write({ ...base, data: Buffer.alloc(0), last: true, crc32c: 12345 });
      call.end();
    });
    assert.equal(err?.code, grpc.status.DATA_LOSS);
    assert.match(err?.details ?? '', /snapshot checksum mismatch/);
    assert.equal(delivered.length, 0);
    assert.deepEqual(fs.readdirSync(into), [], 'the damaged snapshot is not left on disk');
  } finally {
    client.close();
  }
});

/** Sends a snapshot on a raw connection by hand: header, `data`, then the last chunk with `crc`; `cutAfterData` drops the connection instead. */
async function sendRaw(port: number, data: Buffer, crc: number, cutAfterData = false): Promise<Error | null> {
  return new Promise((resolve, reject) => {
    dialRawSnapshot(`http://127.0.0.1:${port}`, undefined, (err) => resolve(err)).then((carrier) => {
      if (!carrier) return reject(new Error('the receiver did not take a raw snapshot'));
      const base = { cluster_id: '7', from: '1', to: '2' };
      carrier.writeHeader(base, Buffer.from(encodeMessage(snapMessage(1n, 2n))));
      carrier.writeData(base, data);
      if (cutAfterData) return carrier.cancel();
      carrier.writeLast(base, crc);
      carrier.end();
    }, reject);
  });
}

test('on a raw connection: a snapshot arrives whole; one whose checksum does not match, or that is cut off, is discarded and nothing is delivered', async () => {
  const [port] = await freePorts(1, 'snapshot-raw');
  const delivered: { m: Message; file: string }[] = [];
  const into = path.join(dir, 'raw');
  await receiver(port, delivered, into);
  const data = randomBytes(2 * (1 << 20) + 777);

  assert.equal(await sendRaw(port, data, crc32c(data)), null);
  await waitFor('the snapshot to be delivered', () => delivered.length === 1);
  assert.ok(fs.readFileSync(delivered[0].file).equals(data), 'the received file differs from the sent one');

  // A wrong checksum with its top bit set: JavaScript's bitwise result is negative, and uint32 takes it by its 32 bits.
  const bad = await sendRaw(port, data, (crc32c(data) ^ 1) | 0x80000000);
  assert.match(bad?.message ?? '', /snapshot checksum mismatch/);
  const cut = await sendRaw(port, data, 0, true);
  assert.match(cut?.message ?? '', /cancelled/);
  await waitFor('no temporary file to be left', () => fs.readdirSync(into).length === 1);
  assert.equal(delivered.length, 1, 'a damaged or partial snapshot was delivered');
  assert.deepEqual(fs.readdirSync(into), [path.basename(delivered[0].file)]);
});

test('a snapshot whose file read fails while the socket drains: the send fails, nothing is delivered, the process goes on, and the next one arrives', async () => {
  const [port] = await freePorts(1, 'snapshot-read-fails');
  const delivered: { m: Message; file: string }[] = [];
  const into = path.join(dir, 'read-fails');
  await receiver(port, delivered, into);
  const data = randomBytes(16 * (1 << 20));
  let failRead = true;
  // A read fails at once, ahead of the consumer, once the socket's buffers are full
  // (loopback takes a few MiB before a write has to wait for 'drain' from the loop).
  async function* chunks(n: number): AsyncGenerator<Buffer> {
    for (let off = 0; off < data.length; off += n) {
      await Promise.resolve(); // a read, done at once
      if (failRead && off >= data.length / 2) throw new Error('the store went away');
      yield data.subarray(off, off + n);
    }
  }
  // A member process ends on an unhandled rejection; the test runner would only note it.
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  after(() => void process.off('unhandledRejection', onUnhandled));
  const outcomes: boolean[] = [];
  const sender = new PeerTransport({
    ...host(1n, 7n, { unreachable: 0, refused: 0 }),
    snapshotData: (m) => Promise.resolve({ message: m, chunks, done: () => undefined }),
    snapshotSent: (_peer, ok) => void outcomes.push(ok),
  });
  transports.push(sender);
  sender.setPeers(new Map([[2n, [`http://127.0.0.1:${port}`]]]));
  sender.send([snapMessage(1n, 2n)]);
  await waitFor('the failed send to be reported', () => outcomes.length === 1);
  assert.deepEqual(outcomes, [false]);
  assert.deepEqual(unhandled, [], 'the failed read was left unhandled: a member would have exited');
  await waitFor('no temporary file to be left', () => fs.readdirSync(into).length === 0);
  assert.equal(delivered.length, 0, 'a partial snapshot was delivered');

  failRead = false;
  sender.send([snapMessage(1n, 2n)]);
  await waitFor('the second snapshot to be delivered', () => outcomes.length === 2 && delivered.length === 1);
  assert.deepEqual(outcomes, [false, true]);
  assert.ok(fs.readFileSync(delivered[0].file).equals(data), 'the received file differs from the sent one');
});
