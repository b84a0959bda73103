// DNS for --discovery-srv tests: a real DNS server (Debian's dnsmasq) on port 53
// of a loopback address of the test's own, serving the records given, and the
// wrapper that runs a command with its resolver pointed there: `unshare -m`
// with a resolv.conf bind-mounted over /etc/resolv.conf.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { requireTool, run, stopProcess, waitFor } from './tools.js';

export class SrvDns {
  private constructor(
    private readonly proc: ChildProcess,
    /** Prefix a command with it to run it against this server. */
    readonly wrap: string[],
  ) {}

  /**
   * Starts dnsmasq on `address` (any 127.x.y.z answers on Linux) with dnsmasq's
   * `records` (--srv-host=..., --host-record=...), and waits until `probeHost`
   * resolves through it. Files go to `dir`.
   */
  static async start(dir: string, address: string, records: string[], probeHost: string): Promise<SrvDns> {
    requireTool('dnsmasq');
    const resolvConf = path.join(dir, `resolv-${address}.conf`);
    fs.writeFileSync(resolvConf, `nameserver ${address}\n`);
    const wrap = ['unshare', '-m', 'sh', '-c', `mount --bind ${resolvConf} /etc/resolv.conf && exec "$@"`, 'sh'];
    const log = fs.openSync(path.join(dir, `dnsmasq-${address}.log`), 'a');
    const proc = spawn(
      'dnsmasq',
      ['-k', '--no-resolv', '--no-hosts', `--listen-address=${address}`, '--bind-interfaces', '--port=53', '--user=root', '--pid-file=', ...records],
      { stdio: ['ignore', log, log] },
    );
    fs.closeSync(log);
    const dns = new SrvDns(proc, wrap);
    try {
      await waitFor('dnsmasq to answer', async () => (await run(...dns.withDns(['getent', 'hosts', probeHost]))).stdout.trim() !== '', {
        timeoutMs: 10_000,
        intervalMs: 100,
      });
    } catch (e) {
      await dns.stop();
      throw e;
    }
    return dns;
  }

  /** `cmd` as run()'s command and arguments, resolving names through this server. */
  withDns(cmd: string[]): [string, string[]] {
    return [this.wrap[0], [...this.wrap.slice(1), ...cmd]];
  }

  async stop(): Promise<void> {
    await stopProcess(this.proc);
  }
}
