// A kubelet stand-in for tests of the Kubernetes control-plane recovery: it runs
// the static pods of one node's manifests dir as the kubelet does. Every file
// whose name does not start with a dot is a pod; its first container's command
// and args run (`etcd` is the real etcd binary), with each hostPath volume
// bind-mounted at its mountPath inside `unshare -m`. The container's own
// filesystem is a fresh tmpfs over the node's root on every start, so whatever
// a pod writes outside its volumes (a --data-dir outside the mount) is lost
// when it restarts, as it would be. A pod whose process exits, or whose
// liveness probe (httpGet) fails failureThreshold times, is restarted; a
// changed manifest restarts its pod; a manifest moved away stops it. stop()
// ends every pod.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { parse } from 'yaml';

export interface KubeletOptions {
  /** the node's manifests dir (e.g. ROOT/etc/kubernetes/manifests) */
  manifestsDir: string;
  /** the node's root: paths under it are the container's filesystem (a fresh tmpfs per start) except its volumes */
  root: string;
  /** where pods' logs (NAME.log, appended) and the stand-in's own files go; outside root */
  stateDir: string;
  /** a command's first word mapped to the program run (default: etcd → etcd on PATH) */
  binaries?: Record<string, string>;
  /** multiplies the manifests' probe delays and periods (kubeadm's 10 s become 1 s at 0.1) */
  probeTimeScale?: number;
  /** how often the manifests dir is read (ms) */
  syncMs?: number;
}

interface Pod {
  file: string;
  hash: string;
  proc?: ChildProcess;
  starts: number;
  failures: number;
  startedAt: number;
  stopping?: Promise<void>;
  restartAt?: number;
  probe?: { host: string; port: number; path: string; delayMs: number; periodMs: number; threshold: number };
  lastProbe: number;
  error?: string;
}

const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
const under = (p: string, dir: string) => p === dir || p.startsWith(`${dir}/`);

interface PodSpec {
  spec?: {
    containers?: Array<{
      command?: string[];
      args?: string[];
      volumeMounts?: Array<{ name: string; mountPath: string }>;
      livenessProbe?: {
        httpGet?: { host?: string; path?: string; port?: number; scheme?: string };
        initialDelaySeconds?: number;
        periodSeconds?: number;
        failureThreshold?: number;
      };
    }>;
    volumes?: Array<{ name: string; hostPath?: { path: string; type?: string } }>;
  };
}

export class KubeletStandIn {
  readonly pods = new Map<string, Pod>();
  /** starts per manifest name, across its moves out of the dir and back (a restart by moving the manifest counts) */
  private readonly startsOf = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly stage: string;

  constructor(readonly o: KubeletOptions) {
    mkdirSync(o.stateDir, { recursive: true });
    this.stage = path.join(o.stateDir, 'host-root');
    mkdirSync(this.stage, { recursive: true });
  }

  /** Starts watching the manifests dir (again, after stop(): a node that boots). */
  start(): this {
    this.stopped = false;
    const tick = () => {
      if (this.stopped) return;
      this.sync();
      this.timer = setTimeout(tick, this.o.syncMs ?? 200);
    };
    tick();
    return this;
  }

  /** The pod of manifest `name` (e.g. "etcd.yaml"): how often a pod of that name was started, and whether it runs now. */
  pod(name: string): { starts: number; running: boolean; pid?: number; error?: string } {
    const p = this.pods.get(name);
    return {
      starts: this.startsOf.get(name) ?? 0,
      running: !!p?.proc && p.proc.exitCode === null && p.proc.signalCode === null,
      pid: p?.proc?.pid,
      error: p?.error,
    };
  }

  /** Kills a running pod's process (a crash): the stand-in restarts it. */
  crash(name: string): void {
    this.pods.get(name)?.proc?.kill('SIGKILL');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await Promise.all([...this.pods.values()].map((p) => this.kill(p)));
  }

  private sync(): void {
    let names: string[] = [];
    try {
      names = readdirSync(this.o.manifestsDir).filter((n) => !n.startsWith('.') && statSync(path.join(this.o.manifestsDir, n)).isFile());
    } catch {
      // no manifests dir: no pods
    }
    for (const [name, pod] of this.pods) {
      if (!names.includes(name)) {
        void this.kill(pod);
        this.pods.delete(name);
      }
    }
    for (const name of names) {
      const file = path.join(this.o.manifestsDir, name);
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch {
        continue; // moved meanwhile
      }
      const hash = createHash('sha256').update(text).digest('hex');
      let pod = this.pods.get(name);
      if (pod && pod.hash !== hash) {
        // A changed manifest: the pod is stopped, then started from the new one.
        const same = pod;
        same.hash = hash;
        void this.kill(same).then(() => {
          if (!this.stopped && this.pods.get(name) === same) this.run(same, text);
        });
        continue;
      }
      if (!pod) {
        pod = { file, hash, starts: 0, failures: 0, startedAt: 0, lastProbe: 0 };
        this.pods.set(name, pod);
        this.run(pod, text);
        continue;
      }
      if (pod.stopping) continue;
      const alive = pod.proc && pod.proc.exitCode === null && pod.proc.signalCode === null;
      if (!alive && pod.restartAt !== undefined && Date.now() >= pod.restartAt) this.run(pod, text);
      else if (alive) this.probe(pod, text);
    }
  }

  private probe(pod: Pod, text: string): void {
    const pr = pod.probe;
    const now = Date.now();
    if (!pr || now - pod.startedAt < pr.delayMs || now - pod.lastProbe < pr.periodMs) return;
    pod.lastProbe = now;
    const req = http.get({ host: pr.host, port: pr.port, path: pr.path, timeout: Math.max(500, pr.periodMs) }, (res) => {
      res.resume();
      if (res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 400) pod.failures = 0;
      else this.probeFailed(pod, text);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => this.probeFailed(pod, text));
  }

  private probeFailed(pod: Pod, text: string): void {
    pod.failures++;
    if (!pod.probe || pod.failures < pod.probe.threshold || pod.stopping || this.pods.get(path.basename(pod.file)) !== pod) return;
    void this.kill(pod).then(() => {
      if (!this.stopped && this.pods.get(path.basename(pod.file)) === pod) this.run(pod, text);
    });
  }

  private kill(pod: Pod): Promise<void> {
    pod.restartAt = undefined;
    const proc = pod.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
    pod.stopping ??= new Promise<void>((resolve) => {
      const hard = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      proc.once('exit', () => {
        clearTimeout(hard);
        pod.stopping = undefined;
        resolve();
      });
      proc.kill('SIGTERM');
    });
    return pod.stopping;
  }

  private run(pod: Pod, text: string): void {
    const name = path.basename(pod.file);
    let doc: PodSpec;
    try {
      doc = parse(text) as PodSpec;
    } catch (e) {
      pod.error = `not YAML: ${(e as Error).message.split('\n')[0]}`;
      return;
    }
    const c = doc?.spec?.containers?.[0];
    const argv = [...(c?.command ?? []), ...(c?.args ?? [])].map(String);
    if (argv.length === 0) {
      pod.error = 'no command';
      return;
    }
    const bins: Record<string, string> = { etcd: 'etcd', ...this.o.binaries };
    argv[0] = bins[argv[0]] ?? argv[0];
    const root = path.resolve(this.o.root);
    const lines = ['set -e', `mount --bind ${sq(root)} ${sq(this.stage)}`, `mount -t tmpfs -o mode=755 pod-rootfs ${sq(root)}`];
    for (const m of c?.volumeMounts ?? []) {
      const v = doc.spec?.volumes?.find((x) => x.name === m.name);
      if (!v?.hostPath) continue;
      const host = path.resolve(v.hostPath.path);
      if (v.hostPath.type === 'DirectoryOrCreate') mkdirSync(host, { recursive: true });
      if (!existsSync(host)) {
        pod.error = `hostPath ${host} does not exist`;
        return;
      }
      // The host's copy of a path under the node's root is reached through the stage (the root itself is the tmpfs now).
      const src = under(host, root) ? path.join(this.stage, path.relative(root, host)) : host;
      lines.push(`mkdir -p ${sq(m.mountPath)}`, `mount --bind ${sq(src)} ${sq(m.mountPath)}`);
    }
    lines.push('exec "$@"');
    const hg = c?.livenessProbe?.httpGet;
    const scale = this.o.probeTimeScale ?? 0.1;
    pod.probe = hg?.port
      ? {
          host: hg.host ?? '127.0.0.1',
          port: Number(hg.port),
          path: hg.path ?? '/',
          delayMs: (c?.livenessProbe?.initialDelaySeconds ?? 0) * 1000 * scale,
          periodMs: (c?.livenessProbe?.periodSeconds ?? 10) * 1000 * scale,
          threshold: c?.livenessProbe?.failureThreshold ?? 3,
        }
      : undefined;
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('ETCD')) env[k] = v;
    const fd = openSync(path.join(this.o.stateDir, `${name}.log`), 'a');
    const proc = spawn('unshare', ['-m', '--propagation', 'private', '--', 'sh', '-c', lines.join('\n'), 'pod', ...argv], { env, stdio: ['ignore', fd, fd] });
    closeSync(fd);
    pod.proc = proc;
    pod.error = undefined;
    pod.starts++;
    this.startsOf.set(name, (this.startsOf.get(name) ?? 0) + 1);
    pod.failures = 0;
    pod.startedAt = Date.now();
    pod.lastProbe = 0;
    proc.once('exit', () => {
      // Restarted after a back-off unless it was stopped on purpose.
      if (!pod.stopping && !this.stopped) pod.restartAt = Date.now() + 1000;
    });
  }
}
