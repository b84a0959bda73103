// The segment the agent is filling: revisions whole and in order, each with its
// time window, and the lease records between them. Closed (segmentWriter's
// bytes, then encoded and spooled by the agent) every --delta-interval or at
// --segment-size; lease records alone never make a segment (an idle cluster
// writes none): they wait for the next revision.
import type { WatchEvent } from '../../client/watchStream.js';
import { SegmentWriter, type SegmentEvent } from '../segmentCodec.js';

export class OpenSegment {
  readonly writer: SegmentWriter;
  firstRevision = 0;
  lastRevision = 0;
  firstSeenAtMs = 0;
  lastSeenAtMs = 0;
  /** the window start of the first revision */
  windowStartMs = 0;
  revisions = 0;
  events = 0;
  leaseRecords = 0;
  /** when the first revision went in (the close deadline runs from here) */
  openedAtMs = 0;

  constructor(readonly clusterId: bigint) {
    this.writer = new SegmentWriter(clusterId);
  }

  leaseGrant(id: bigint, ttlSeconds: number, beforeRevision: number, seenAtMs: number): void {
    this.writer.leaseGrant({ id, ttlSeconds, beforeRevision, seenAtMs });
    this.leaseRecords++;
  }

  leaseRevoke(id: bigint, afterRevision: number, seenAtMs: number): void {
    this.writer.leaseRevoke({ id, afterRevision, seenAtMs });
    this.leaseRecords++;
  }

  revision(revision: number, events: readonly WatchEvent[], seenAtMs: number, currentSinceMs: number): void {
    if (this.revisions === 0) {
      this.firstRevision = revision;
      this.firstSeenAtMs = seenAtMs;
      this.windowStartMs = currentSinceMs;
      this.openedAtMs = Date.now();
    }
    this.writer.revision({ revision, seenAtMs, currentSinceMs, events: events.map(toSegmentEvent) });
    this.lastRevision = revision;
    this.lastSeenAtMs = seenAtMs;
    this.revisions++;
    this.events += events.length;
  }

  get size(): number {
    return this.writer.size;
  }
}

function toSegmentEvent(e: WatchEvent): SegmentEvent {
  const kv = e.kv;
  return {
    type: e.type,
    kv: { key: kv.key, value: kv.value, createRevision: kv.createRevision, modRevision: kv.modRevision, version: kv.version, lease: kv.lease },
  };
}
