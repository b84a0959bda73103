// What the backup and restore benches share: the CLI run as a child (its output
// and wall time), and the exit on a bad option with the bench's usage.
import { spawn } from 'node:child_process';
import { BIN } from '../test/support/lifeboatCluster.js';

/** `lifeboat ARGS` as a child process: its exit code, stdout and stderr together, and the wall time in seconds. */
export function lifeboat(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; out: string; seconds: number }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ code, out, seconds: (performance.now() - t0) / 1000 }));
  });
}

/** A bad option: the message and the usage on stderr, exit 2. */
export function failWithUsage(message: string, usage: string): never {
  console.error(`${message}\n${usage}`);
  process.exit(2);
}
