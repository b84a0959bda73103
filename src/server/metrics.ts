// Prometheus text metrics under etcd's names, so existing dashboards and alerts
// work, plus Lifeboat's batch counters that show group commit at work.
import http from 'node:http';
import type net from 'node:net';
import { hostPort } from '../common/urls.js';
import { createTlsServer, type ServerTlsOptions } from '../net/tlsTermination.js';
import type { PeerCounts } from '../transport/peerTransport.js';
import { SpanMarker } from './spanMarker.js';

const BUCKETS = [0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096, 8.192];

/** A Prometheus histogram: cumulative counts per upper bound (`buckets`, seconds), their sum and count. */
export class Histogram {
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(private readonly buckets: readonly number[] = BUCKETS) {
    this.counts = new Array<number>(buckets.length).fill(0);
  }
  observe(v: number): void {
    for (let i = 0; i < this.buckets.length; i++) if (v <= this.buckets[i]) this.counts[i]++;
    this.sum += v;
    this.count++;
  }
  /** With `labels`, one series of several (`header`: whether this one writes the HELP and TYPE lines). */
  render(name: string, help: string, labels = '', header = true): string {
    const l = labels ? `${labels},` : '';
    const lines = header ? [`# HELP ${name} ${help}`, `# TYPE ${name} histogram`] : [];
    this.buckets.forEach((b, i) => lines.push(`${name}_bucket{${l}le="${b}"} ${this.counts[i]}`));
    lines.push(
      `${name}_bucket{${l}le="+Inf"} ${this.count}`,
      `${name}_sum${labels ? `{${labels}}` : ''} ${this.sum}`,
      `${name}_count${labels ? `{${labels}}` : ''} ${this.count}`,
    );
    return lines.join('\n');
  }
}

export class Metrics {
  leaderChanges = 0;
  proposalsCommitted = 0;
  proposalsApplied = 0;
  proposalsFailed = 0;
  proposalsPending = 0;
  hasLeader = 0;
  isLeader = 0;
  fsyncs = 0;
  entriesPersisted = 0;
  /** Raft messages handed to the transport, by type. */
  readonly raftMessagesSent = new Map<string, number>();
  readonly fsync = new Histogram();
  readonly apply = new Histogram();
  readonly peerRtt = new Histogram();
  dbSize: () => number = () => 0;
  /** What the event loop is running, for the stall watchdog (stallWatchdog.ts). */
  readonly spans = new SpanMarker();
  /** Message streams opened and snapshots sent to peers, by kind (PeerTransport.peerCounts). */
  peerCounts: () => PeerCounts = () => ({ streams: { raw: 0, grpc: 0 }, snapshots: { raw: 0, grpc: 0 } });
  private readonly listeners: net.Server[] = [];
  private readonly sockets = new Set<net.Socket>();

  observeFsync(seconds: number, entries: number): void {
    this.fsyncs++;
    this.entriesPersisted += entries;
    this.fsync.observe(seconds);
  }

  observeApply(seconds: number, entries: number): void {
    this.apply.observe(seconds);
    this.proposalsApplied += entries;
  }

  render(): string {
    const g = (name: string, help: string, type: 'counter' | 'gauge', v: number) => `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${name} ${v}`;
    return (
      [
        g('etcd_server_has_leader', 'Whether or not a leader exists. 1 is existence, 0 is not.', 'gauge', this.hasLeader),
        g('etcd_server_is_leader', 'Whether or not this member is a leader.', 'gauge', this.isLeader),
        g('etcd_server_leader_changes_seen_total', 'The number of leader changes seen.', 'counter', this.leaderChanges),
        g('etcd_server_proposals_committed_total', 'The total number of consensus proposals committed.', 'counter', this.proposalsCommitted),
        g('etcd_server_proposals_applied_total', 'The total number of consensus proposals applied.', 'counter', this.proposalsApplied),
        g('etcd_server_proposals_pending', 'The current number of pending proposals to commit.', 'gauge', this.proposalsPending),
        g('etcd_server_proposals_failed_total', 'The total number of failed proposals seen.', 'counter', this.proposalsFailed),
        this.fsync.render('etcd_disk_wal_fsync_duration_seconds', 'The latency distributions of fsync called by WAL.'),
        this.apply.render('etcd_disk_backend_commit_duration_seconds', 'The latency distributions of commit called by backend.'),
        this.peerRtt.render('etcd_network_peer_round_trip_time_seconds', 'Round-Trip-Time histogram between peers.'),
        g('etcd_mvcc_db_total_size_in_bytes', 'Total size of the underlying database physically allocated in bytes.', 'gauge', this.dbSize()),
        g('lifeboat_wal_fsyncs_total', 'Raft log writes that ended in an fsync (one per batch).', 'counter', this.fsyncs),
        g('lifeboat_wal_entries_persisted_total', 'Raft entries made durable; divided by fsyncs it is the mean batch size.', 'counter', this.entriesPersisted),
        [
          '# HELP lifeboat_raft_messages_sent_total Raft messages handed to the peer transport, by type (App, AppResp, Heartbeat, ...).',
          '# TYPE lifeboat_raft_messages_sent_total counter',
          ...[...this.raftMessagesSent].map(([type, n]) => `lifeboat_raft_messages_sent_total{type="${type}"} ${n}`),
        ].join('\n'),
        [
          '# HELP lifeboat_peer_streams_opened_total Message streams opened to peers: raw connections, or gRPC streams to peers that take no raw one.',
          '# TYPE lifeboat_peer_streams_opened_total counter',
          ...Object.entries(this.peerCounts().streams).map(([kind, n]) => `lifeboat_peer_streams_opened_total{kind="${kind}"} ${n}`),
        ].join('\n'),
        [
          '# HELP lifeboat_peer_snapshots_sent_total Snapshots streamed to peers: on raw connections, or over gRPC to peers that take none.',
          '# TYPE lifeboat_peer_snapshots_sent_total counter',
          ...Object.entries(this.peerCounts().snapshots).map(([kind, n]) => `lifeboat_peer_snapshots_sent_total{kind="${kind}"} ${n}`),
        ].join('\n'),
      ].join('\n') + '\n'
    );
  }

  /** Serves /metrics and /health on each URL; https:// ones over TLS with the client URLs' certificates (as etcd 3.4). */
  async listen(urls: string[], tls?: ServerTlsOptions): Promise<void> {
    if (urls.length === 0) return;
    const handler: http.RequestListener = (req, res) => {
      if (req.url === '/metrics') {
        let text: string;
        try {
          text = this.render();
        } catch (e) {
          // A store that lost its applies refuses its records while the member stops.
          res.writeHead(503, { 'content-type': 'text/plain' });
          res.end(`${(e as Error).message}\n`);
          return;
        }
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
        res.end(text);
      } else if (req.url === '/health') {
        res.writeHead(this.hasLeader ? 200 : 503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ health: this.hasLeader ? 'true' : 'false' }));
      } else {
        res.writeHead(404);
        res.end();
      }
    };
    // The plaintext of TLS connections (ended here) goes to one HTTP server that listens nowhere.
    const behindTls = http.createServer(handler);
    for (const url of urls) {
      const [host, port] = hostPort(url).split(/:(?=\d+$)/);
      const secure = url.startsWith('https:');
      if (secure && !tls) throw new Error(`cannot serve metrics URL ${url}: no TLS certificate (--cert-file, --key-file)`);
      const listener: net.Server =
        secure && tls
          ? createTlsServer({ ...tls, listener: 'metrics', alpn: ['http/1.1'] }, (socket) => behindTls.emit('connection', socket))
          : http.createServer(handler);
      listener.on('connection', (socket: net.Socket) => {
        this.sockets.add(socket);
        socket.once('close', () => this.sockets.delete(socket));
      });
      await new Promise<void>((resolve, reject) => {
        listener.once('error', (e) => reject(new Error(`cannot listen on metrics URL ${url}: ${e.message}`)));
        listener.listen(Number(port), host, () => resolve());
      });
      this.listeners.push(listener);
    }
  }

  async close(): Promise<void> {
    const closed = this.listeners.map((l) => new Promise<void>((resolve) => l.close(() => resolve())));
    for (const s of this.sockets) s.destroy();
    await Promise.all(closed);
  }
}
