// Messages between the load generator (bench/loadGenerator.ts) and its worker
// processes (bench/loadWorker.ts). Kept apart so both sides share one shape.
import type { TlsOptions } from '../src/client/tls.js';

export type LoadOp =
  | { kind: 'put'; keyPrefix: string; keySpace: number }
  | { kind: 'get'; serializable: boolean; keyPrefix: string; keySpace: number }
  /** Txns of `batch` puts writing keys [from, to) once each: how stores are filled. */
  | { kind: 'fill'; keyPrefix: string; from: number; to: number; batch: number };

export interface LoadJob {
  /** endpoints as host:port (https://host:port with `tls`); each client connects to one, round robin */
  endpoints: string[];
  /** the CA and client certificate the clients connect with */
  tls?: TlsOptions;
  /** concurrent clients in this worker */
  clients: number;
  /** index of this worker's first client among all clients (spreads endpoints and keys) */
  firstClient: number;
  op: LoadOp;
  valueSize: number;
  /** stop issuing new requests after this long (fill: hard limit) */
  durationMs: number;
}

export type ToWorker = { type: 'job'; job: LoadJob } | { type: 'go' };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'done'; ops: number; errors: number; firstError?: string; seconds: number; histogram: string }
  | { type: 'failed'; message: string };

/** Latencies are recorded in microseconds, up to a minute, 3 significant digits. */
export const HISTOGRAM = { lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 } as const;

/** The fixed-width key a fill or a put writes: `<prefix><index, 8 digits>`. */
export const keyAt = (prefix: string, i: number): string => `${prefix}${String(i).padStart(8, '0')}`;
