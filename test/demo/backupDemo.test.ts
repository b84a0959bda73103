// `npm run demo -- backup`, as a newcomer runs it: the agent, list, verify, a
// deleted prefix back with restore-keys, then every member lost and the cluster
// recovered from the store as it was at a time; it succeeds and says every key
// came back both times.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/tools.js';

test('the backup demo runs the agent, verifies, restores keys, and recovers the whole cluster to a time', { timeout: 180_000 }, async () => {
  const out = await new Promise<{ code: number | null; text: string }>((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'scripts', 'demo', 'main.js'), 'backup'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    child.stderr.on('data', (d) => (text += d));
    const timer = setTimeout(() => child.kill('SIGINT'), 150_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, text });
    });
  });
  assert.equal(out.code, 0, out.text);
  assert.match(out.text, /backup verified: cluster [0-9a-f]{16} \(lifeboat\)/);
  assert.match(out.text, /every one of the 150 orders is back/);
  assert.match(out.text, /materialized file:\/\/\S+@\S+Z: revision \d+ of cluster [0-9a-f]{16}/);
  assert.match(out.text, /Run r-\S+ succeeded/);
  assert.match(out.text, /the recovered cluster \(3 members\) holds every one of the \d+ keys as they were at \S+Z: \/app\/release=v1/);
});
