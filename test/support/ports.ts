// Test ports: below 32768 (outgoing connections take ports from 32768 up), each
// checked free by binding it, and spread by a per-file base so test files that
// run in parallel do not race for the same ones.
import net from 'node:net';

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

const taken = new Set<number>();

/** `count` free ports from a block chosen by `seed` (e.g. the test file's name). */
export async function freePorts(count: number, seed: string): Promise<number[]> {
  let h = 0;
  for (const c of seed) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  const base = 10000 + (h % 200) * 100;
  const out: number[] = [];
  for (let i = 0; i < 20000 && out.length < count; i++) {
    const port = 10000 + ((base - 10000 + i) % 22000);
    if (taken.has(port)) continue;
    if (await isFree(port)) {
      taken.add(port);
      out.push(port);
    }
  }
  if (out.length < count) throw new Error(`could not find ${count} free ports below 32768`);
  return out;
}
