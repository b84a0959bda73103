// Following the source: a watch from the revision after the last one applied,
// each revision's events written to the destination together, in revision order.
// Progress is recorded at most every SAVE_EVERY_MS: after an interruption the
// events since the last record are applied again, which leaves the same keys,
// since they are replayed in order.
import type { EtcdClient } from '../client/etcdClient.js';
import type { WatchEvent, WatchStream } from '../client/watchStream.js';
import { CompactedError } from './copy.js';
import { writeOps, type DestOp } from './destWriter.js';
import type { KeyMapping } from './keyMapping.js';
import type { MigrationProgress } from './progressFile.js';

const SAVE_EVERY_MS = 250;
const POLL_MS = 500;
/** How long the watch must have been quiet before a progress notice is believed. */
const QUIET_MS = 1000;
/** Reconnects in a row without a response before the migration gives up. */
const MAX_RECONNECTS = 30;

export interface FollowOptions {
  src: EtcdClient;
  dst: EtcdClient;
  mapping: KeyMapping;
  progress: MigrationProgress;
  save(): void;
  /**
   * The revision to stop at, once known: events above it are left for later, and
   * following ends when everything up to it has arrived. Undefined: keep following.
   */
  stopAt(): number | undefined;
  onApplied(revision: number, events: number): void;
  signal: AbortSignal;
}

/** Returns when everything up to stopAt() is applied; throws CompactedError or on a failure that does not pass. */
export async function follow(o: FollowOptions): Promise<void> {
  let failures = 0;
  while (failures < MAX_RECONNECTS) {
    o.signal.throwIfAborted();
    let ws: WatchStream | undefined;
    try {
      ws = await o.src.watch(o.mapping.source.key, { rangeEnd: o.mapping.source.rangeEnd, startRevision: o.progress.appliedRevision + 1 });
      if (await followStream(ws, o, () => (failures = 0))) return;
    } catch (err) {
      if (err instanceof CompactedError || o.signal.aborted) throw err;
      if (++failures >= MAX_RECONNECTS) throw err;
    } finally {
      ws?.close();
    }
    // The stream ended or failed (a member restarting, a leader change): watch again.
    await new Promise((r) => setTimeout(r, Math.min(1000, 100 * failures)));
  }
  throw new Error(`the source stopped answering watches after ${MAX_RECONNECTS} attempts; check --from`);
}

/** true: everything up to stopAt() arrived; false: the stream ended, watch again. */
async function followStream(ws: WatchStream, o: FollowOptions, responded: () => void): Promise<boolean> {
  const { progress } = o;
  let savedAt = Date.now();
  let dirty = false;
  let lastEventAt = Date.now();
  try {
    // Bounded by the caller's signal and stopAt(); each pass waits at most POLL_MS.
    for (;;) {
      if (o.signal.aborted) return false;
      const target = o.stopAt();
      if (target !== undefined) {
        if (progress.appliedRevision >= target) return true;
        ws.requestProgress();
      }
      const batch = await ws.next(POLL_MS);
      if (!batch) {
        if (!ws.isOpen) return false;
        continue;
      }
      responded();
      if (batch.canceled) {
        if (batch.canceled.compactRevision > 0) throw new CompactedError(progress.appliedRevision + 1);
        throw new Error(`the source cancelled the watch: ${batch.canceled.reason || 'no reason given'}`);
      }
      if (batch.events.length === 0) {
        // A progress notice. etcd 3.4 sends it even while history is still on its
        // way, so it counts only once no event has come for a while; the finish
        // compares both sides anyway.
        if (target !== undefined && batch.headerRevision >= target && Date.now() - lastEventAt >= QUIET_MS) return true;
        continue;
      }
      lastEventAt = Date.now();
      for (const [rev, events] of byRevision(batch.events)) {
        if (rev <= progress.appliedRevision) continue; // already applied (a watch restarted)
        if (target !== undefined && rev > target) return true;
        await writeOps(
          o.dst,
          events.map((e) => toDestOp(e, o.mapping)),
        );
        progress.appliedRevision = rev;
        dirty = true;
        o.onApplied(rev, events.length);
      }
      if (dirty && Date.now() - savedAt >= SAVE_EVERY_MS) {
        o.save();
        savedAt = Date.now();
        dirty = false;
      }
    }
  } finally {
    if (dirty) o.save();
  }
}

function byRevision(events: readonly WatchEvent[]): Array<[number, WatchEvent[]]> {
  const out: Array<[number, WatchEvent[]]> = [];
  for (const e of events) {
    const last = out[out.length - 1];
    if (last && last[0] === e.kv.modRevision) last[1].push(e);
    else out.push([e.kv.modRevision, [e]]);
  }
  return out;
}

function toDestOp(e: WatchEvent, mapping: KeyMapping): DestOp {
  const key = mapping.toDest(e.kv.key);
  return e.type === 'PUT' ? { put: { key, value: e.kv.value } } : { delete: { key } };
}
