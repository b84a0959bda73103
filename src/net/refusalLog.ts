// Log lines for refused connections, bounded so that a client retrying in a
// loop (etcdctl redials every few milliseconds) or a scan of the port cannot
// fill a disk. The first refusal of a kind (listener, remote host, certificate
// CN, reason) is logged at once; the same kind again is counted and logged at
// most once per window with the number left out; and every kind together gets
// at most `maxLines` lines per window, the rest counted into the next line.
// Worded as etcd logs it: "rejected connection".

export interface WarnLogger {
  warn(fields: Record<string, unknown>, msg: string): void;
}

export interface Refusal {
  /** 'client', 'peer' or 'metrics' */
  listener: string;
  /** host:port of the remote end */
  remoteAddr: string;
  /** the common name of the certificate presented ('' if none) */
  cn: string;
  /** why, e.g. "certificate has expired" */
  error: string;
}

const MAX_KINDS = 1024;

export class RefusalLog {
  private readonly kinds = new Map<string, { loggedAt: number; suppressed: number }>();
  private windowStart = 0;
  private linesInWindow = 0;
  private suppressedOther = 0;

  constructor(
    private readonly log: WarnLogger,
    private readonly windowMs = 60_000,
    private readonly maxLines = 20,
    private readonly now: () => number = Date.now,
  ) {}

  refused(r: Refusal): void {
    const t = this.now();
    if (t - this.windowStart >= this.windowMs) {
      this.windowStart = t;
      this.linesInWindow = 0;
    }
    const host = r.remoteAddr.replace(/:\d+$/, '');
    const key = `${r.listener}\n${host}\n${r.cn}\n${r.error}`;
    let kind = this.kinds.get(key);
    if (kind && t - kind.loggedAt < this.windowMs) {
      kind.suppressed++;
      return;
    }
    if (this.linesInWindow >= this.maxLines) {
      this.suppressedOther++;
      return;
    }
    if (!kind) {
      if (this.kinds.size >= MAX_KINDS) this.kinds.delete(this.kinds.keys().next().value as string);
      kind = { loggedAt: t, suppressed: 0 };
      this.kinds.set(key, kind);
    }
    const fields: Record<string, unknown> = { listener: r.listener, remoteAddr: r.remoteAddr, cn: r.cn, error: r.error };
    if (kind.suppressed > 0) fields.suppressed = kind.suppressed;
    if (this.suppressedOther > 0) fields.suppressedOther = this.suppressedOther;
    this.log.warn(fields, 'rejected connection');
    kind.loggedAt = t;
    kind.suppressed = 0;
    this.suppressedOther = 0;
    this.linesInWindow++;
  }
}
