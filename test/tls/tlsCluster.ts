// Lifeboat members with mutual TLS on their client and peer URLs, for the
// tests under test/tls: certificates made with openssl for the run (the test
// CA; a peer certificate with CN lifeboat-peer; per member copies, so one
// member's files can be rotated alone), https:// URLs, and etcdctl and
// lifeboat with --cacert --cert --key.
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { issueCert, type IssuedCert, type TestCerts } from '../support/certs.js';
import { BIN, etcdctl, LifeboatCluster, parseEtcdJson, run, waitFor, type MemberProc, type RunResult } from '../support/lifeboatCluster.js';

export const PEER_CN = 'lifeboat-peer';

/** Where a member's own copies of its certificates live. */
export interface MemberFiles {
  dir: string;
  serverCert: string;
  serverKey: string;
  peerCert: string;
  peerKey: string;
}

export class TlsCluster {
  private constructor(
    readonly c: LifeboatCluster,
    readonly certs: TestCerts,
    readonly peer: IssuedCert,
  ) {}

  static async create(seed: string, certs: TestCerts, n: number): Promise<TlsCluster> {
    const peer = await issueCert(certs, 'peer', { cn: PEER_CN });
    return new TlsCluster(await LifeboatCluster.create(seed, n), certs, peer);
  }

  /** A member with https:// URLs (not started). */
  define(name: string): MemberProc {
    const m = this.c.define(name);
    m.peerUrl = m.peerUrl.replace('http://', 'https://');
    m.clientUrl = m.clientUrl.replace('http://', 'https://');
    m.client = m.clientUrl;
    return m;
  }

  files(m: MemberProc): MemberFiles {
    const dir = path.join(this.c.dir, `${m.name}-tls`);
    return {
      dir,
      serverCert: path.join(dir, 'server.crt'),
      serverKey: path.join(dir, 'server.key'),
      peerCert: path.join(dir, 'peer.crt'),
      peerKey: path.join(dir, 'peer.key'),
    };
  }

  /** Starts a new cluster of members `names`, each with its own certificates; resolves once they answer. */
  async startFounders<N extends string[]>(...names: N): Promise<{ [K in keyof N]: MemberProc }> {
    const founders = names.map((n) => this.define(n));
    this.c.members.push(...founders);
    const initial = founders.map((m) => `${m.name}=${m.peerUrl}`).join(',');
    for (const m of founders) this.c.spawn(m, [...this.tlsArgs(m), '--initial-cluster', initial, '--initial-cluster-state', 'new']);
    await this.waitStarted(founders.length);
    return founders as { [K in keyof N]: MemberProc };
  }

  /** Runs etcdctl commands (user add, auth enable...) one after the other against `endpoint`, each required to succeed. */
  async ctlAll(endpoint: string, commands: string[][]): Promise<void> {
    for (const args of commands) {
      const r = await this.ctl(endpoint, ...args);
      if (r.code !== 0) throw new Error(`etcdctl ${args[0]} ${args[1] ?? ''} failed: ${r.stderr}`);
    }
  }

  /**
   * What must never leak from a run with this cluster and `password`: the password and a
   * line from inside each private key (the client's, the servers', the peers').
   */
  secrets(password: string): string[] {
    const keyLine = (file: string) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .find((l) => l.length > 40 && !l.startsWith('-----')) ?? file;
    return [password, keyLine(this.certs.clientKey), keyLine(this.certs.serverKey), keyLine(this.peer.key)];
  }

  /** The shipped playbooks' TLS variables for members started with this cluster's certificates. */
  playbookTlsVars(): Record<string, string> {
    return {
      'cert-file': this.certs.serverCert,
      'key-file': this.certs.serverKey,
      'trusted-ca-file': this.certs.ca,
      'client-cert-auth': 'true',
      'peer-cert-file': this.peer.cert,
      'peer-key-file': this.peer.key,
      'peer-trusted-ca-file': this.certs.ca,
      'peer-client-cert-auth': 'true',
    };
  }

  /** The member's TLS settings as flags, after copying its certificates into its own directory. */
  tlsArgs(m: MemberProc): string[] {
    const f = this.files(m);
    mkdirSync(f.dir, { recursive: true });
    copyFileSync(this.certs.serverCert, f.serverCert);
    copyFileSync(this.certs.serverKey, f.serverKey);
    copyFileSync(this.peer.cert, f.peerCert);
    copyFileSync(this.peer.key, f.peerKey);
    return [
      '--cert-file',
      f.serverCert,
      '--key-file',
      f.serverKey,
      '--trusted-ca-file',
      this.certs.ca,
      '--client-cert-auth',
      '--peer-cert-file',
      f.peerCert,
      '--peer-key-file',
      f.peerKey,
      '--peer-trusted-ca-file',
      this.certs.ca,
      '--peer-client-cert-auth',
      '--peer-cert-allowed-cn',
      PEER_CN,
    ];
  }

  /** etcdctl --cacert --cert --key (the test client certificate). */
  ctl(endpoints: string | string[], ...args: string[]): Promise<RunResult> {
    return etcdctl(endpoints, '--cacert', this.certs.ca, '--cert', this.certs.clientCert, '--key', this.certs.clientKey, ...args);
  }

  /** `lifeboat ARGS --endpoints E --cacert --cert --key`. */
  lifeboat(endpoints: string | string[], ...args: string[]): Promise<RunResult> {
    const ep = Array.isArray(endpoints) ? endpoints.join(',') : endpoints;
    return run(process.execPath, [BIN, ...args, '--endpoints', ep, '--cacert', this.certs.ca, '--cert', this.certs.clientCert, '--key', this.certs.clientKey], {
      timeoutMs: 60_000,
    });
  }

  async leader(members = this.c.running()): Promise<MemberProc | undefined> {
    for (const m of members) {
      const r = await this.ctl(m.client, 'endpoint', 'status', '-w', 'json');
      if (r.code !== 0) continue;
      const s = parseEtcdJson(r.stdout)[0]?.Status;
      if (s && s.leader !== undefined && String(s.leader) === String(s.header.member_id)) return m;
    }
    return undefined;
  }

  /** Waits for a leader and for `n` members to have published their names. */
  async waitStarted(n: number): Promise<void> {
    await waitFor('a leader', () => this.leader(), 30_000, 200);
    await waitFor('every member to publish its name', async () => {
      const r = await this.ctl(this.c.endpoints(), 'member', 'list');
      return r.code === 0 && r.stdout.split('\n').filter((l) => l.includes(', started, ')).length === n;
    });
  }

  /** The member's "rejected connection" log lines, parsed. */
  refusals(m: MemberProc): Array<{ listener: string; remoteAddr: string; cn: string; error: string; suppressed?: number }> {
    return m.log
      .filter((l) => l.includes('"msg":"rejected connection"'))
      .map((l) => JSON.parse(l) as { listener: string; remoteAddr: string; cn: string; error: string; suppressed?: number });
  }
}
