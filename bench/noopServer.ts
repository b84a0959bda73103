// No-op gRPC servers speaking etcd's KV and Maintenance.Status: driving them
// measures the load generator's own ceiling on this machine. One process per CPU,
// so the server side is as parallel as etcd's and the figure is the generator's.
import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { freePorts } from '../test/support/ports.js';

const ENTRY = fileURLToPath(new URL('./noopServerProcess.js', import.meta.url));

export interface NoopServers {
  endpoints: string[];
  stop(): void;
}

export async function startNoopServers(count = os.cpus().length): Promise<NoopServers> {
  const ports = await freePorts(count, 'bench-noop');
  const procs: ChildProcess[] = [];
  const stop = () => {
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  };
  try {
    await Promise.all(
      ports.map(
        (port) =>
          new Promise<void>((resolve, reject) => {
            const p = fork(ENTRY, [String(port)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
            procs.push(p);
            const timer = setTimeout(() => reject(new Error(`no-op server on port ${port} not ready in 30 s`)), 30_000);
            p.once('message', () => {
              clearTimeout(timer);
              resolve();
            });
            p.once('exit', (code) => {
              clearTimeout(timer);
              reject(new Error(`no-op server on port ${port} exited (${code})`));
            });
          }),
      ),
    );
  } catch (e) {
    stop();
    throw e;
  }
  return { endpoints: ports.map((p) => `127.0.0.1:${p}`), stop };
}
