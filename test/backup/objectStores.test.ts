// The backup stores as the backup commands open them (openBackupStore: the
// store behind the retrying wrapper): a file:// directory and a real S3-protocol
// server (s3rver on 127.0.0.1, the SDK unmocked) behave the same for put, get,
// download, head, list and delete, and a large object goes up in parts. The S3
// server stopped and started again under a call: the retries carry it through.
// Wrong keys, no credentials, an unreachable endpoint and an untrusted
// certificate each fail `backup list` with one line naming the cause.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createReadStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ObjectMissing, StoreUnavailable, type ObjectStore } from '../../src/backup/objectStore.js';
import type { RetryEvent } from '../../src/backup/retryingStore.js';
import { openBackupStore, type StoreFlagValues } from '../../src/cli/backupStoreFlags.js';
import { makeCerts, type TestCerts } from '../support/certs.js';
import { startS3Server, type S3Server } from '../support/s3Server.js';
import { failsWithOneLine, ROOT, run, type RunResult } from '../support/tools.js';

const MIB = 1024 * 1024;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'lifeboat-stores-'));
let s3: S3Server;
let certs: TestCerts;
let tlsS3: S3Server;

const flags = (o: Partial<StoreFlagValues> = {}): StoreFlagValues => ({ 'store-timeout': 10_000, 'store-attempts': 3, 'store-retry-for': 5_000, ...o });

/** `lifeboat ARGS` with exactly `env` as its environment (plus PATH and a HOME without an AWS profile). */
function cli(env: Record<string, string>, ...args: string[]): Promise<RunResult> {
  const home = path.join(tmp, 'home');
  mkdirSync(home, { recursive: true });
  return run(process.execPath, [path.join(ROOT, 'bin', 'run.js'), ...args], { env: { PATH: process.env.PATH ?? '', HOME: home, NO_COLOR: '1', ...env } });
}

const sha = (file: string) =>
  new Promise<string>((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(file)
      .on('data', (d) => h.update(d))
      .on('end', () => resolve(h.digest('hex')))
      .on('error', reject);
  });

before(async () => {
  s3 = await startS3Server(path.join(tmp, 's3'), 'backup/objectStores');
  Object.assign(process.env, s3.env);
  mkdirSync(path.join(tmp, 'certs'));
  certs = await makeCerts(path.join(tmp, 'certs'));
  tlsS3 = await startS3Server(path.join(tmp, 's3-tls'), 'backup/objectStores-tls', { tls: { key: certs.serverKey, cert: certs.serverCert } });
});

after(async () => {
  await s3?.stop();
  await tlsS3?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

const kinds: Array<[string, () => Promise<ObjectStore>]> = [
  [
    'file',
    async () => {
      const dir = path.join(tmp, 'file-store');
      mkdirSync(dir, { recursive: true });
      return openBackupStore(pathToFileURL(dir).href, flags());
    },
  ],
  ['s3', () => openBackupStore(s3.url('team/prod'), flags({ 's3-endpoint': s3.endpoint }))],
];

for (const [kind, open] of kinds) {
  describe(`${kind} store`, () => {
    test('put, get, head, list by prefix, delete; a missing object is ObjectMissing, deleting it twice is fine', async () => {
      const store = await open();
      try {
        await store.put('c1/a.manifest.json', Buffer.from('{"a":1}'));
        await store.put('c1/b', Buffer.from('bee'));
        await store.put('c2/x', Buffer.alloc(0));
        await store.put('c1/b', Buffer.from('bee2')); // replaced whole
        assert.equal((await store.get('c1/b')).toString(), 'bee2');
        assert.equal((await store.head('c1/b'))?.size, 4);
        assert.equal(await store.head('c1/nope'), undefined);
        assert.deepEqual(
          (await store.list('c1/')).map((o) => [o.key, o.size]),
          [
            ['c1/a.manifest.json', 7],
            ['c1/b', 4],
          ],
        );
        assert.deepEqual(
          (await store.list('')).map((o) => o.key),
          ['c1/a.manifest.json', 'c1/b', 'c2/x'],
        );
        await assert.rejects(store.get('c1/nope'), ObjectMissing);
        await store.delete('c1/b');
        await store.delete('c1/b');
        assert.deepEqual(
          (await store.list('c1/')).map((o) => o.key),
          ['c1/a.manifest.json'],
        );
        assert.equal(await store.abortStaleUploads(60_000), 0);
      } finally {
        store.close();
      }
    });

    test('a 21 MiB file goes up (in parts on S3) and comes back byte for byte', async () => {
      const store = await open();
      const file = path.join(tmp, `${kind}-big`);
      const chunk = createHash('sha512').update(kind).digest();
      writeFileSync(
        file,
        Buffer.concat(Array.from({ length: Math.ceil((21 * MIB) / chunk.length) }, (_, i) => chunk.map((b) => b ^ (i & 0xff)))).subarray(0, 21 * MIB),
      );
      try {
        await store.put('c3/full-big.db.gz', undefined, { file, partSize: 5 * MIB });
        assert.equal((await store.head('c3/full-big.db.gz'))?.size, 21 * MIB);
        const back = path.join(tmp, `${kind}-big.back`);
        assert.equal(await store.download('c3/full-big.db.gz', back), 21 * MIB);
        assert.equal(await sha(back), await sha(file));
        await assert.rejects(store.download('c3/none', path.join(tmp, `${kind}-none`)), ObjectMissing);
      } finally {
        store.close();
      }
    });
  });
}

describe('s3 store outages', () => {
  test('the server stopped and started again on the same port under a call: the call retries and succeeds, the retries counted', async () => {
    const retries: RetryEvent[] = [];
    const store = await openBackupStore(s3.url('outage'), flags({ 's3-endpoint': s3.endpoint, 'store-attempts': 30, 'store-retry-for': 20_000 }), (e) =>
      retries.push(e),
    );
    try {
      await store.put('c/before', Buffer.from('1'));
      await s3.stop();
      const pending = store.put('c/during', Buffer.from('2'));
      await new Promise((r) => setTimeout(r, 1500));
      await s3.start();
      await pending;
      assert.ok(store.retries > 0 && store.retries === retries.length, `retries ${store.retries}`);
      assert.match(retries[0].error.message, /cannot reach http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
      assert.deepEqual(
        (await store.list('c/')).map((o) => o.key),
        ['c/before', 'c/during'],
      );
    } finally {
      store.close();
      await s3.start();
    }
  });

  test('a server that stays down: the call gives up within its bounds with one line; a missing object is never retried', async () => {
    const store = await openBackupStore(s3.url('outage'), flags({ 's3-endpoint': s3.endpoint, 'store-attempts': 4, 'store-retry-for': 3_000 }));
    try {
      await assert.rejects(store.get('c/nothing-here'), ObjectMissing);
      assert.equal(store.retries, 0);
      await s3.stop();
      const t0 = Date.now();
      const err = await store.list('c/').then(
        () => assert.fail('list succeeded with the server down'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof StoreUnavailable && err.retryable, String(err));
      assert.match(err.message, /^s3:\/\/lifeboat\/outage: list c\/ failed \d time\(s\) over [\d.]+s; last: list c\/: cannot reach .* check --s3-endpoint/);
      assert.doesNotMatch(err.message, /\n/);
      assert.ok(Date.now() - t0 < 6000, `gave up after ${Date.now() - t0} ms`);
      assert.ok(store.retries >= 1 && store.retries <= 3);
    } finally {
      store.close();
      await s3.start();
    }
  });
});

describe('backup list: credentials, endpoints and certificates', () => {
  test('the right keys list the store; wrong keys exit 3 with one line naming the refusal and no secret', async () => {
    const ok = await cli(s3.env, 'backup', 'list', s3.url('creds'), '--s3-endpoint', s3.endpoint, '-w', 'json');
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(JSON.parse(ok.stdout).clusters.length, 0);
    const bad = await cli(s3.wrongKeysEnv, 'backup', 'list', s3.url('creds'), '--s3-endpoint', s3.endpoint);
    const line = failsWithOneLine(bad, 3, 'refused the credentials (InvalidAccessKeyId)', 'AWS_ACCESS_KEY_ID');
    assert.ok(!line.includes(s3.wrongKeysEnv.AWS_SECRET_ACCESS_KEY) && !line.includes(s3.wrongKeysEnv.AWS_ACCESS_KEY_ID), line);
  });

  test('no credentials at all: exit 3 at once, naming where credentials come from (instance metadata is not asked)', async () => {
    const r = await cli({ AWS_REGION: 'us-east-1' }, 'backup', 'list', s3.url('creds'), '--s3-endpoint', s3.endpoint);
    failsWithOneLine(r, 3, 'no S3 credentials found', 'AWS_PROFILE', '--s3-imds');
    assert.ok(r.ms < 10_000, `took ${r.ms} ms`);
  });

  test('an endpoint nobody listens on: exit 1 after the bounded retries, one line', async () => {
    const r = await cli(s3.env, 'backup', 'list', s3.url(), '--s3-endpoint', 'http://127.0.0.1:9', '--store-attempts', '2', '--store-retry-for', '2s');
    failsWithOneLine(r, 1, 'cannot reach http://127.0.0.1:9 (ECONNREFUSED)', 'failed 2 time(s)');
  });

  test('an https endpoint: trusted with --s3-ca-file, refused in one line without it', async () => {
    const ok = await cli(s3.env, 'backup', 'list', tlsS3.url(), '--s3-endpoint', tlsS3.endpoint, '--s3-ca-file', certs.ca);
    assert.equal(ok.code, 0, ok.stderr);
    const bad = await cli(s3.env, 'backup', 'list', tlsS3.url(), '--s3-endpoint', tlsS3.endpoint);
    failsWithOneLine(bad, 3, 'is not trusted', '--s3-ca-file');
  });

  test('a file store directory that does not exist: one line at once', async () => {
    const r = await cli({}, 'backup', 'list', pathToFileURL(path.join(tmp, 'nowhere')).href);
    failsWithOneLine(r, 3, 'does not exist; create it');
    assert.ok(r.ms < 10_000);
  });
});
