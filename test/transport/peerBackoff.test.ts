// The peer transport's retry policy: a dead peer, or one that refuses us as
// another cluster, is retried with growing backoff, not at every heartbeat.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { MessageType, type Message } from '../../src/raft/types.js';
import { PeerTransport } from '../../src/transport/peerTransport.js';
import { host } from './transportHost.js';
import { freePorts } from '../support/ports.js';

const transports: PeerTransport[] = [];
after(async () => {
  for (const t of transports) await t.close();
});

function heartbeat(from: bigint, to: bigint): Message {
  return { type: MessageType.Heartbeat, from, to, term: 1, logTerm: 0, index: 0, entries: [], commit: 0, reject: false, rejectHint: 0 };
}

/** Sends a heartbeat every 50 ms for `ms`, as a leader would. */
async function heartbeats(t: PeerTransport, to: bigint, ms: number): Promise<void> {
  for (let elapsed = 0; elapsed < ms; elapsed += 50) {
    t.send([heartbeat(1n, to)]);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// 3 s of heartbeats: with backoff doubling from 50 ms to a 2 s cap a peer is
// tried about 6 times; without it, about 60 (once per heartbeat).
const WINDOW_MS = 3000;
const AT_MOST = 15;

test('a dead peer is retried with backoff, not at every heartbeat', async () => {
  const [port] = await freePorts(1, 'peer-backoff-dead');
  const counts = { unreachable: 0, refused: 0 };
  const t = new PeerTransport(host(1n, 7n, counts));
  transports.push(t);
  t.setPeers(new Map([[2n, [`http://127.0.0.1:${port}`]]]));
  await heartbeats(t, 2n, WINDOW_MS);
  assert.ok(counts.unreachable >= 1, 'the dead peer was never tried');
  assert.ok(counts.unreachable <= AT_MOST, `${counts.unreachable} connection attempts to a dead peer in ${WINDOW_MS} ms`);
});

test('a peer that answers "cluster ID mismatch" is retried with backoff too; an accepting peer resets it', async () => {
  const [a, b] = await freePorts(2, 'peer-backoff-mismatch');
  const counts = { unreachable: 0, refused: 0 };
  const sender = new PeerTransport(host(1n, 7n, counts));
  const stranger = new PeerTransport(host(2n, 8n, { unreachable: 0, refused: 0 }));
  transports.push(sender, stranger);
  await stranger.listen([`http://127.0.0.1:${a}`]);
  sender.setPeers(new Map([[2n, [`http://127.0.0.1:${a}`]]]));
  await heartbeats(sender, 2n, WINDOW_MS);
  assert.ok(counts.refused >= 1, 'the stranger never refused us');
  assert.ok(counts.refused <= AT_MOST, `${counts.refused} refused batches in ${WINDOW_MS} ms`);

  // A peer of our own cluster receives every heartbeat.
  let delivered = 0;
  const friend = new PeerTransport({ ...host(3n, 7n, { unreachable: 0, refused: 0 }), deliver: () => void delivered++ });
  transports.push(friend);
  await friend.listen([`http://127.0.0.1:${b}`]);
  sender.setPeers(new Map([[3n, [`http://127.0.0.1:${b}`]]]));
  const deadline = Date.now() + 30_000;
  while (delivered < 10 && Date.now() < deadline) await heartbeats(sender, 3n, 500);
  assert.ok(delivered >= 10, `only ${delivered} heartbeats delivered in 30 s`);
});
