// Snapshot streaming, both ends, on the peer service's SendSnapshot call.
// Sender: streams a snapshot's chunks as they are read, each write waiting for
// the stream to drain, with a running CRC-32C sent in the
// last chunk; the outcome goes to host.snapshotSent() exactly once.
// Receiver: writes chunks straight to `<file>.tmp` (refusing strangers before
// anything reaches the disk), checks the CRC-32C, fsyncs, renames, fsyncs the
// directory, and only then tells host.snapshotReceived().
import * as grpc from '#grpc-js';
import { crc32c } from '../common/crc32c.js';
import fs from 'node:fs/promises';
import path from 'node:path';
import { decodeMessage, encodeMessage } from '../raft/codec.js';
import type { NodeId } from '../raft/types.js';
import { refusal, type Ack, type OutgoingSnapshot, type PeerClient, type TransportHost } from './peerProtocol.js';

const SNAPSHOT_CHUNK = 1 << 20;

/**
 * Streams the snapshot chunk by chunk: each read is asynchronous and each
 * write waits for the stream to drain, so a large snapshot never holds the event
 * loop (a burst of a whole database once stalled a leader past the election
 * timeout, and every new leader started the same snapshot again).
 * `closed()` says the sender was closed meanwhile: the call is then cancelled.
 */
export async function streamSnapshot(client: PeerClient, host: TransportHost, peer: NodeId, snap: OutgoingSnapshot, closed: () => boolean): Promise<void> {
  let finished = false;
  let wake: (() => void) | undefined;
  const call = client.SendSnapshot((err, ack) => {
    finished = true;
    wake?.();
    const ok = !err && !ack?.refused;
    if (ack?.refused) host.refused(peer, ack.refused, BigInt(ack.superseded_by || '0'));
    if (err) host.logEvent('warn', 'snapshot send failed', { peer: peer.toString(16), error: err.message.split('\n')[0] });
    host.snapshotSent(peer, ok);
  });
  const drained = () =>
    new Promise<void>((resolve) => {
      wake = resolve;
      call.once('drain', resolve);
    }).finally(() => (wake = undefined));
  const base = { cluster_id: host.clusterId().toString(), from: host.memberId.toString(), to: peer.toString() };
  let bytes = 0;
  try {
    call.write({ ...base, header: Buffer.from(encodeMessage(snap.message)), data: Buffer.alloc(0), last: false, crc32c: 0 });
    let crc = 0;
    // Bounded by the snapshot's size; leaving the loop early ends the read behind it.
    for await (const data of snap.chunks(SNAPSHOT_CHUNK)) {
      if (finished) return;
      if (closed()) {
        call.cancel(); // the callback reports the failure to Raft
        return;
      }
      crc = crc32c(data, crc);
      bytes += data.length;
      if (!call.write({ ...base, data, last: false, crc32c: 0 })) await drained();
    }
    if (finished) return;
    call.write({ ...base, data: Buffer.alloc(0), last: true, crc32c: crc });
    call.end();
    host.logEvent('info', 'sent snapshot to peer', { peer: peer.toString(16), index: snap.message.snapshot?.meta.index, bytes });
  } catch (e) {
    host.logEvent('warn', 'snapshot send failed', { peer: peer.toString(16), error: (e as Error).message });
    call.cancel(); // the callback reports the failure to Raft
  } finally {
    snap.done();
  }
}

/**
 * A snapshot arrives in chunks, written straight to a file as they come (the
 * stream pauses while the disk catches up), so a database of any size is never
 * held in memory. The CRC-32C over every byte is checked and the file made
 * durable before the member is told. `heard(from)` marks the sender as in
 * contact once the snapshot is stored.
 */
export function receiveSnapshot(
  host: TransportHost,
  heard: (from: NodeId) => void,
  call: grpc.ServerReadableStream<Record<string, unknown>, Ack>,
  cb: grpc.sendUnaryData<Ack>,
): void {
  let header: Buffer | undefined;
  let from = 0n;
  let clusterId = 0n;
  let expectedCrc: number | undefined;
  let crc = 0;
  let bytes = 0;
  let file = '';
  let out: fs.FileHandle | undefined;
  let failed: Error | undefined;
  // Writes go one after another; `pending` is the tail of that chain.
  let pending: Promise<void> = Promise.resolve();
  const write = (data: Buffer) => {
    const at = bytes;
    bytes += data.length;
    crc = crc32c(data, crc);
    call.pause();
    pending = pending
      .then(async () => {
        if (failed) return;
        if (!out) {
          file = host.incomingSnapshotFile(from);
          out = await fs.open(`${file}.tmp`, 'w');
        }
        await out.write(data, 0, data.length, at);
      })
      .catch((e: Error) => {
        failed ??= e;
      })
      .finally(() => call.resume());
  };
  const discard = async () => {
    await out?.close().catch(() => undefined);
    if (file) await fs.rm(`${file}.tmp`, { force: true });
  };
  call.on('data', (c: { cluster_id: string; from: string; header: Buffer; data: Buffer; last: boolean; crc32c: number }) => {
    if (!header && c.header.length > 0) {
      header = c.header;
      from = BigInt(c.from);
      clusterId = BigInt(c.cluster_id);
      // Strangers are refused before anything reaches the disk.
      if (refusal(host, clusterId, from)) failed ??= new Error('refused');
    }
    if (c.data.length > 0 && !failed) write(c.data);
    if (c.last) expectedCrc = c.crc32c;
  });
  call.on('error', () => void pending.then(discard));
  call.on('end', () => {
    void pending.then(async () => {
      const no = refusal(host, clusterId, from);
      if (no) {
        await discard();
        return cb(null, no);
      }
      if (failed) {
        await discard();
        host.logEvent('warn', 'could not store a snapshot from a peer', { peer: from.toString(16), error: failed.message });
        return cb({ code: grpc.status.INTERNAL, details: `snapshot not stored: ${failed.message}` });
      }
      if (!header || expectedCrc === undefined || crc !== expectedCrc || !out) {
        await discard();
        host.logEvent('warn', 'discarded a damaged snapshot', { peer: from.toString(16), bytes });
        return cb({ code: grpc.status.DATA_LOSS, details: 'snapshot checksum mismatch' });
      }
      try {
        await out.sync();
        await out.close();
        await fs.rename(`${file}.tmp`, file);
        const dir = await fs.open(path.dirname(file), 'r');
        await dir.sync().finally(() => dir.close());
      } catch (e) {
        await discard();
        return cb({ code: grpc.status.INTERNAL, details: `snapshot not stored: ${(e as Error).message}` });
      }
      heard(from);
      host.snapshotReceived(decodeMessage(header), file);
      cb(null, { refused: '', superseded_by: '0' });
    });
  });
}
