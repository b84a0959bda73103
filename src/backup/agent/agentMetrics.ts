// The agent's /metrics (Prometheus text, names in prom-client's style) and
// /health, served on --listen-metrics. Lag: revisions between the cluster's
// head (the newest the watch reported) and the last revision the agent has
// committed (spooled durably), and how long the agent has been behind.
import http from 'node:http';
import { hostPort, splitHostPort } from '../../common/urls.js';
import { InputError } from '../../common/errors.js';

export class AgentMetrics {
  lastFullTimestampMs = 0;
  lastFullRevision = 0;
  lastSegmentTimestampMs = 0;
  /** the last revision committed (spooled durably) */
  lastStoredRevision = 0;
  /** the last revision uploaded to the store with its manifest */
  lastUploadedRevision = 0;
  headRevision = 0;
  /** since when the agent is behind (undefined: caught up) */
  behindSinceMs: number | undefined;
  bytesWritten = 0;
  objectsWritten = 0;
  storeRetries = 0;
  /** retries the store's own wrapper made (RetryingStore) */
  storeWrapperRetries: () => number = () => 0;
  spoolBytes = 0;
  spoolLimit = 0;
  gaps = 0;
  fullsSkipped = 0;
  watchConnected = false;
  storeFailing = false;
  /** why the agent is not healthy beyond the above, if anything */
  problem: string | undefined;
  private server?: http.Server;

  lagRevisions(): number {
    return Math.max(0, this.headRevision - this.lastStoredRevision);
  }

  lagSeconds(now = Date.now()): number {
    return this.behindSinceMs === undefined ? 0 : Math.max(0, (now - this.behindSinceMs) / 1000);
  }

  render(now = Date.now()): string {
    const m = (name: string, help: string, type: 'counter' | 'gauge', v: number) => `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${name} ${v}`;
    return `${[
      m('lifeboat_backup_last_full_timestamp_seconds', 'When the last full was taken (unix seconds); 0: none yet.', 'gauge', this.lastFullTimestampMs / 1000),
      m('lifeboat_backup_last_full_revision', 'Revision of the last full.', 'gauge', this.lastFullRevision),
      m('lifeboat_backup_last_segment_timestamp_seconds', 'When the last segment was committed (unix seconds).', 'gauge', this.lastSegmentTimestampMs / 1000),
      m('lifeboat_backup_last_stored_revision', 'The last revision committed (spooled durably, then uploaded).', 'gauge', this.lastStoredRevision),
      m('lifeboat_backup_last_uploaded_revision', 'The last revision in the store with its manifest.', 'gauge', this.lastUploadedRevision),
      m('lifeboat_backup_head_revision', "The cluster's newest revision as the watch reported it.", 'gauge', this.headRevision),
      m('lifeboat_backup_lag_revisions', 'Revisions the cluster is ahead of what the agent committed.', 'gauge', this.lagRevisions()),
      m('lifeboat_backup_lag_seconds', 'How long the agent has been behind the cluster (0: caught up).', 'gauge', this.lagSeconds(now)),
      m('lifeboat_backup_bytes_written_total', 'Bytes uploaded to the store (objects and manifests).', 'counter', this.bytesWritten),
      m('lifeboat_backup_objects_written_total', 'Objects uploaded to the store with their manifests.', 'counter', this.objectsWritten),
      m('lifeboat_backup_store_retries_total', 'Store calls that failed and were tried again.', 'counter', this.storeRetries + this.storeWrapperRetries()),
      m('lifeboat_backup_spool_bytes', 'Bytes waiting in the spool dir for the store.', 'gauge', this.spoolBytes),
      m('lifeboat_backup_spool_limit_bytes', 'The spool limit (--spool-limit).', 'gauge', this.spoolLimit),
      m('lifeboat_backup_gaps_total', 'Gaps recorded (compaction past the agent, a cancelled watch, a new cluster ID).', 'counter', this.gaps),
      m('lifeboat_backup_fulls_skipped_total', 'Scheduled fulls skipped because nothing was written since the last.', 'counter', this.fullsSkipped),
      m('lifeboat_backup_watch_connected', 'Whether the agent has a watch on the cluster (1) or not (0).', 'gauge', this.watchConnected ? 1 : 0),
    ].join('\n')}\n`;
  }

  /** Healthy: a watch open, the store taking uploads, the spool under its limit. */
  health(): { healthy: boolean; reason?: string } {
    if (this.problem) return { healthy: false, reason: this.problem };
    if (!this.watchConnected) return { healthy: false, reason: 'no watch on the cluster' };
    if (this.storeFailing) return { healthy: false, reason: 'the store is failing uploads' };
    if (this.spoolLimit > 0 && this.spoolBytes > this.spoolLimit) return { healthy: false, reason: 'the spool is over its limit' };
    return { healthy: true };
  }

  async listen(url: string): Promise<void> {
    if (!/^http:\/\/[^/]+:\d+\/?$/.test(url)) throw new InputError(`--listen-metrics ${url}: give http://HOST:PORT`);
    const { host, port } = splitHostPort(hostPort(url));
    const server = http.createServer((req, res) => {
      if (req.url === '/metrics') {
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
        res.end(this.render());
      } else if (req.url === '/health') {
        const h = this.health();
        res.writeHead(h.healthy ? 200 : 503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ health: h.healthy ? 'true' : 'false', ...(h.reason ? { reason: h.reason } : {}) }));
      } else {
        res.writeHead(404);
        res.end();
      }
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e) => reject(new InputError(`cannot listen on --listen-metrics ${url}: ${e.message}`)));
      server.listen(port, host, () => resolve());
    });
    this.server = server;
  }

  close(): void {
    this.server?.closeAllConnections();
    this.server?.close();
  }
}
