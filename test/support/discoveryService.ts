// A private discovery service for tests: Debian's etcd-discovery (the
// discovery.etcd.io server) in front of a real etcd 3.4 started with --enable-v2,
// and Debian's tinyproxy as a --discovery-proxy; all on 127.0.0.1, ports from
// ports.ts, every process stopped by stop().
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { EtcdCluster } from './etcdCluster.js';
import { freePorts } from './ports.js';
import { requireTool, stopProcess, waitFor } from './tools.js';

async function httpOk(url: string, init?: RequestInit): Promise<string | undefined> {
  try {
    const r = await fetch(url, { ...init, signal: AbortSignal.timeout(2000) });
    return r.ok ? await r.text() : undefined;
  } catch {
    return undefined;
  }
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export class DiscoveryService {
  private service?: ChildProcess;
  private proxy?: ChildProcess;
  proxyUrl = '';
  proxyLog = '';

  private constructor(
    readonly etcd: EtcdCluster,
    readonly url: string,
    private readonly port: number,
  ) {}

  static async start(seed: string): Promise<DiscoveryService> {
    requireTool('discovery.etcd.io');
    const etcd = await EtcdCluster.start({ size: 1, portSeed: `${seed}-etcd`, extraArgs: ['--enable-v2'] });
    const [port] = await freePorts(1, `${seed}-service`);
    const d = new DiscoveryService(etcd, `http://127.0.0.1:${port}`, port);
    try {
      await d.startService();
    } catch (e) {
      await d.stop();
      throw e;
    }
    return d;
  }

  /** (Re)starts discovery.etcd.io and waits until it answers. */
  async startService(): Promise<void> {
    const log = fs.openSync(path.join(this.etcd.dir, 'discovery.log'), 'a');
    this.service = spawn('discovery.etcd.io', ['--addr', `127.0.0.1:${this.port}`, '--etcd', this.etcd.members[0].clientUrl, '--host', this.url], {
      stdio: ['ignore', log, log],
    });
    fs.closeSync(log);
    await waitFor('discovery.etcd.io to answer', () => httpOk(`${this.url}/health`), { timeoutMs: 15_000, intervalMs: 100 });
  }

  async stopService(): Promise<void> {
    if (this.service) await stopProcess(this.service);
    this.service = undefined;
  }

  /** A new token's discovery URL, as `curl https://discovery.etcd.io/new?size=N` gives it. */
  async newToken(size: number): Promise<string> {
    const url = await httpOk(`${this.url}/new?size=${size}`);
    if (!url) throw new Error('discovery.etcd.io gave no token');
    return url.trim();
  }

  /** Starts tinyproxy on 127.0.0.1, logging every request it forwards. */
  async startProxy(seed: string): Promise<string> {
    requireTool('tinyproxy');
    const [port] = await freePorts(1, `${seed}-proxy`);
    const conf = path.join(this.etcd.dir, 'tinyproxy.conf');
    this.proxyLog = path.join(this.etcd.dir, 'tinyproxy.log');
    fs.writeFileSync(conf, [`Port ${port}`, 'Listen 127.0.0.1', 'Timeout 30', 'Allow 127.0.0.1', `LogFile "${this.proxyLog}"`, 'LogLevel Info', ''].join('\n'));
    this.proxy = spawn('tinyproxy', ['-d', '-c', conf], { stdio: 'ignore' });
    this.proxyUrl = `http://127.0.0.1:${port}`;
    await waitFor('tinyproxy to listen', () => listening(port), { timeoutMs: 15_000, intervalMs: 100 });
    return this.proxyUrl;
  }

  proxied(): string {
    return this.proxyLog && fs.existsSync(this.proxyLog) ? fs.readFileSync(this.proxyLog, 'utf8') : '';
  }

  async stop(): Promise<void> {
    if (this.proxy) await stopProcess(this.proxy);
    await this.stopService();
    await this.etcd.stop();
  }
}
