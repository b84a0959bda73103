// An empty Node process, started beside a system under test and measured at the
// same moment as its idle members: the floor no Node member goes below, so the
// bench can say how much of a member's RSS is its own.
import { spawn } from 'node:child_process';
import { onCleanup } from './cleanup.js';
import { smapsRollup } from './memberMetrics.js';

const MiB = 1024 * 1024;

export interface FloorMemory {
  rss: number;
  pss: number;
  private: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
}

// It waits on stdin (which keeps it alive) and answers each line with its memoryUsage.
const SCRIPT = `process.stdin.on('data', () => process.stdout.write(JSON.stringify(process.memoryUsage()) + '\\n'));`;

export function startNodeFloor(): { measure(): Promise<FloorMemory>; stop(): void } {
  const p = spawn(process.execPath, ['-e', SCRIPT], { stdio: ['pipe', 'pipe', 'ignore'] });
  const stop = () => {
    if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  };
  const unregister = onCleanup(stop);
  return {
    measure: () =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the empty Node process did not answer in 5 s')), 5000);
        p.stdout.once('data', (d: Buffer) => {
          clearTimeout(timer);
          const m = JSON.parse(d.toString()) as NodeJS.MemoryUsage;
          const s = smapsRollup(p.pid ?? 0);
          resolve({ ...s, heapUsed: m.heapUsed / MiB, heapTotal: m.heapTotal / MiB, external: m.external / MiB, arrayBuffers: m.arrayBuffers / MiB });
        });
        p.stdin.write('\n');
      }),
    stop() {
      stop();
      unregister();
    },
  };
}
