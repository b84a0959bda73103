// The vendor bundles and their V8 code caches (src/common/vendorBundle.ts): a
// damaged or missing cache is ignored and the bundle still loads, and the
// bundles' own import() (oclif's way of loading a command) works from the cache.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { codeCacheFile, loadVendorBundle } from '../../src/common/vendorBundle.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const vendor = path.join(root, 'dist', 'vendor');
// Inside dist/ so that the copy resolves its package from the project's node_modules.
const scratch = fs.mkdtempSync(path.join(vendor, 'test-'));
after(() => fs.rmSync(scratch, { recursive: true, force: true }));

function copyBundle(name: string, damage: (cache: Buffer) => Buffer | undefined): string {
  const bundle = path.join(scratch, `${name}-${fs.readdirSync(scratch).length}.cjs`);
  fs.copyFileSync(path.join(vendor, `${name}.cjs`), bundle);
  const cache = damage(fs.readFileSync(codeCacheFile(path.join(vendor, `${name}.cjs`))));
  if (cache) fs.writeFileSync(codeCacheFile(bundle), cache);
  return bundle;
}

test('a bundle loads with its code cache, with a damaged one and with none', () => {
  const flipped = (c: Buffer) => {
    const d = Buffer.from(c);
    d[d.length >> 1] ^= 0xff;
    return d;
  };
  const cases: Array<[string, (c: Buffer) => Buffer | undefined]> = [
    ['as built', (c) => c],
    ['one byte flipped', flipped],
    ['cut short', (c) => c.subarray(0, c.length >> 1)],
    ['empty', () => Buffer.alloc(0)],
    ['missing', () => undefined],
  ];
  for (const [what, damage] of cases) {
    const grpc = loadVendorBundle(copyBundle('grpc-js', damage), '@grpc/grpc-js', (s) => import(s)) as {
      Server?: unknown;
      Metadata?: new () => { get(k: string): unknown[] };
    };
    assert.equal(typeof grpc.Server, 'function', what);
    assert.deepEqual(grpc.Metadata && new grpc.Metadata().get('x'), [], what);
  }
});

test('commands load through the oclif bundle and its cache (its import() of each command included)', () => {
  const r = spawnSync(process.execPath, ['bin/run.js', 'snapshot', 'status', '--help'], { cwd: root, encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /\$ lifeboat snapshot status/);
  assert.equal(r.stderr, '', 'no warnings');
});
