// Test ports: below 32768 (outgoing connections take ports from 32768 up), each
// checked free by binding it, spread by a per-file base, and reserved for this
// test process in a file under the temp dir so test files that run in parallel
// never take the same one: a port is only free by bind between the check and the
// moment its server binds it, and 200 bases for 40-odd seeds collide (e.g.
// etcd-runtime-tail-false and etcd-auth-recovery-new both start at 28400).
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

const taken = new Set<number>();
const reservations = path.join(os.tmpdir(), 'lifeboat-test-ports');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Reserves `port` for this process; false when another live test process holds it. A dead holder's file is taken over. */
function reserve(port: number): boolean {
  fs.mkdirSync(reservations, { recursive: true });
  const file = path.join(reservations, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx' });
      return true;
    } catch {
      let holder: number;
      try {
        holder = Number(fs.readFileSync(file, 'utf8').trim());
      } catch {
        continue; // released meanwhile: try again
      }
      // An empty file is a holder between creating and writing it: held.
      if (!(holder > 0) || alive(holder)) return false;
      // Stale: its process was killed before its exit handler ran. Two processes taking over the same stale file at the same instant are not excluded.
      fs.rmSync(file, { force: true });
    }
  }
  return false;
}

process.once('exit', () => {
  for (const port of taken) {
    const file = path.join(reservations, String(port));
    try {
      if (fs.readFileSync(file, 'utf8').trim() === String(process.pid)) fs.rmSync(file, { force: true });
    } catch {
      // already gone
    }
  }
});

/** `count` free ports from a block chosen by `seed` (e.g. the test file's name). */
export async function freePorts(count: number, seed: string): Promise<number[]> {
  let h = 0;
  for (const c of seed) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  const base = 10000 + (h % 200) * 100;
  const out: number[] = [];
  for (let i = 0; i < 20000 && out.length < count; i++) {
    const port = 10000 + ((base - 10000 + i) % 22000);
    if (taken.has(port)) continue;
    if (!reserve(port)) continue;
    taken.add(port); // reserved: released when this process exits
    if (await isFree(port)) {
      out.push(port);
    }
  }
  if (out.length < count) throw new Error(`could not find ${count} free ports below 32768`);
  return out;
}
