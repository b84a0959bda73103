// The everyday commands over client mutual TLS against a real 1-member etcd 3.4
// (--client-cert-auth), with certificates made by openssl for this run.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EXIT } from '../../src/cli/exitCodes.js';
import { makeCerts, type TestCerts } from '../support/certs.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { etcdctl, lifeboat, parseJsonIds, requireEtcdTools, requireTool, run, waitFor, type RunResult } from '../support/tools.js';

let cluster: EtcdCluster;
let certs: TestCerts;
let ep: string;
let tls: string[];

before(
  async () => {
    requireEtcdTools();
    requireTool('openssl');
    certs = await makeCerts(mkdtempSync(path.join(os.tmpdir(), 'lifeboat-tls-')));
    cluster = await EtcdCluster.start({ size: 1, portSeed: 'interop/tls.test', tls: certs });
    ep = cluster.members[0].clientUrl;
    tls = ['--endpoints', ep, '--cacert', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey];
  },
  { timeout: 60_000 },
);

after(
  async () => {
    await cluster?.stop();
    if (certs) rmSync(certs.dir, { recursive: true, force: true });
  },
  { timeout: 30_000 },
);

function ok(r: RunResult): string {
  assert.equal(r.code, EXIT.OK, `exit ${r.code}; stderr: ${r.stderr}`);
  return r.stdout;
}

const lines = (s: string) =>
  s
    .trim()
    .split('\n')
    .filter((l) => l !== '');

function failsWithOneLine(r: RunResult, code: number, ...mentions: string[]): string {
  assert.equal(r.code, code, `exit code; stdout: ${r.stdout} stderr: ${r.stderr}`);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^[^\n]+\n$/, `stderr should be one line: ${JSON.stringify(r.stderr)}`);
  for (const m of mentions) assert.ok(r.stderr.includes(m), `stderr should mention ${JSON.stringify(m)}: ${r.stderr}`);
  return r.stderr;
}

test('with --cacert --cert --key: member list, put, get, endpoint status/health and snapshot save work', async () => {
  const list = ok(await lifeboat('member', 'list', ...tls));
  assert.match(list, new RegExp(`^[0-9a-f]+, started, infra1, ${cluster.members[0].peerUrl}, ${ep}, false\\n$`));
  assert.equal(ok(await lifeboat('put', '/tls/k', 'secret', ...tls)), 'OK\n');
  assert.equal(ok(await lifeboat('get', '/tls/k', ...tls)), '/tls/k\nsecret\n');
  const etc = await etcdctl(
    '--endpoints',
    ep,
    '--cacert',
    certs.ca,
    '--cert',
    certs.clientCert,
    '--key',
    certs.clientKey,
    'get',
    '/tls/k',
    '--print-value-only',
  );
  assert.equal(etc.stdout, 'secret\n', etc.stderr);

  const status = parseJsonIds(ok(await lifeboat('endpoint', 'status', ...tls, '-w', 'json'))) as Array<{
    Endpoint: string;
    Status: { leader: string; header: { member_id: string } };
  }>;
  assert.equal(status[0].Endpoint, ep);
  assert.equal(status[0].Status.leader, status[0].Status.header.member_id);
  assert.match(ok(await lifeboat('endpoint', 'health', '--cluster', ...tls)), new RegExp(`^${ep} is healthy`));

  const file = path.join(certs.dir, 'tls-backup.db');
  const out = ok(await lifeboat('snapshot', 'save', file, ...tls));
  assert.match(out, /^Snapshot saved at /);
  const bytes = readFileSync(file);
  assert.equal(bytes.length % 512, 32);
  assert.deepEqual(createHash('sha256').update(bytes.subarray(0, -32)).digest(), bytes.subarray(-32));
});

test('with client mutual TLS: del, alarm list, member add --learner, start it, promote and remove (--yes: 2 voters)', { timeout: 120_000 }, async () => {
  assert.equal(ok(await lifeboat('put', '/tls/gone', 'x', ...tls)), 'OK\n');
  assert.equal(ok(await lifeboat('del', '/tls/gone', '--prev-kv', ...tls)), '1\n/tls/gone\nx\n');
  assert.equal(ok(await lifeboat('alarm', 'list', ...tls)), '');
  assert.deepEqual(parseJsonIds(ok(await lifeboat('alarm', 'list', ...tls, '-w', 'json'))).alarms, []);

  const [clientPort, peerPort] = await cluster.freePorts();
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const added = ok(await lifeboat('member', 'add', 'infra2', '--peer-urls', peerUrl, '--learner', ...tls));
  const id = /^Member ([0-9a-f]+) added as learner to cluster [0-9a-f]+\n/.exec(added)?.[1];
  assert.ok(id, added);
  const env = Object.fromEntries([...added.matchAll(/^(ETCD_[A-Z_]+)="(.*)"$/gm)].map((mm) => [mm[1], mm[2]]));
  const learner = await cluster.startJoining('infra2', clientPort, peerPort, env, { learner: true });
  await waitFor('the learner to publish its name', async () =>
    ok(await lifeboat('member', 'list', ...tls)).includes(`${id}, started, infra2, ${peerUrl}, ${learner.clientUrl}, true`),
  );

  const promoted = await waitFor(
    'the learner to be promotable',
    async () => {
      const r = await lifeboat('member', 'promote', id, ...tls);
      if (r.code === 0) return r;
      if (/in sync with leader|unhealthy cluster/.test(r.stderr)) return false;
      throw new Error(`member promote failed: ${r.stderr}`);
    },
    { timeoutMs: 30_000, intervalMs: 500 },
  );
  assert.match(promoted.stdout, new RegExp(`^Member ${id} promoted in cluster [0-9a-f]+\n$`));

  // Two voters: removing one is dangerous, so it needs --yes without a terminal.
  const refused = await lifeboat('member', 'remove', id, ...tls);
  failsWithOneLine(refused, EXIT.REFUSED, '2 voting members', '--yes');
  const removed = await waitFor(
    'member remove to pass the strict reconfiguration check',
    async () => {
      const r = await lifeboat('member', 'remove', id, '--yes', ...tls);
      if (r.code === 0) return r;
      if (r.stderr.includes('unhealthy cluster')) return false;
      throw new Error(`member remove failed: ${r.stderr}`);
    },
    { timeoutMs: 30_000, intervalMs: 500 },
  );
  assert.match(removed.stdout, new RegExp(`^Member ${id} removed from cluster [0-9a-f]+\n$`));
  await cluster.stopMember(learner);
  assert.equal(lines(ok(await lifeboat('member', 'list', ...tls))).length, 1);
});

test('a bare host:port uses TLS when TLS flags are given; LIFEBOAT_* variables stand in for flags', async () => {
  const bare = ep.replace('https://', '');
  assert.equal(
    ok(await lifeboat('get', '/tls/k', '--endpoints', bare, '--cacert', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey)),
    '/tls/k\nsecret\n',
  );
  const viaEnv = await run(process.execPath, ['bin/run.js', 'get', '/tls/k'], {
    env: { ...process.env, LIFEBOAT_ENDPOINTS: ep, LIFEBOAT_CACERT: certs.ca, LIFEBOAT_CERT: certs.clientCert, LIFEBOAT_KEY: certs.clientKey },
  });
  assert.equal(ok(viaEnv), '/tls/k\nsecret\n');
});

test('--insecure-skip-tls-verify connects without --cacert (the client certificate is still presented)', async () => {
  assert.equal(
    ok(await lifeboat('get', '/tls/k', '--endpoints', ep, '--insecure-skip-tls-verify', '--cert', certs.clientCert, '--key', certs.clientKey)),
    '/tls/k\nsecret\n',
  );
});

test('a wrong CA fails at once with one TLS line naming the endpoint and --cacert', async () => {
  const r = await lifeboat('member', 'list', '--endpoints', ep, '--cacert', certs.otherCa, '--cert', certs.clientCert, '--key', certs.clientKey);
  failsWithOneLine(r, EXIT.FAILURE, `TLS handshake with ${ep} failed`, '--cacert');
  assert.ok(r.ms < 10_000, `${r.ms}ms`);
});

test('snapshot save, which dials on its own (no grpc-js), fails as the other commands do: a wrong CA, no client certificate, plaintext to the TLS port', async () => {
  const file = path.join(certs.dir, 'refused-snapshot.db');
  failsWithOneLine(
    await lifeboat('snapshot', 'save', file, '--endpoints', ep, '--cacert', certs.otherCa, '--cert', certs.clientCert, '--key', certs.clientKey),
    EXIT.FAILURE,
    `TLS handshake with ${ep} failed`,
    '--cacert',
  );
  failsWithOneLine(
    await lifeboat('snapshot', 'save', file, '--endpoints', ep, '--cacert', certs.ca),
    EXIT.FAILURE,
    `TLS handshake with ${ep} failed`,
    'check --cert and --key',
  );
  failsWithOneLine(
    await lifeboat('snapshot', 'save', file, '--endpoints', ep.replace('https://', 'http://'), '--dial-timeout', '1s'),
    EXIT.FAILURE,
    'if it serves TLS, use https://',
  );
  assert.equal(existsSync(file) || existsSync(`${file}.part`), false, 'nothing written');
  // The same command with good flags saves.
  assert.match(
    ok(await lifeboat('snapshot', 'save', file, '--endpoints', ep, '--cacert', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey)),
    /Snapshot saved at /,
  );
});

test('no client certificate: one line saying the server wants one', async () => {
  failsWithOneLine(await lifeboat('member', 'list', '--endpoints', ep, '--cacert', certs.ca), EXIT.FAILURE, ep, '--cert', '--key');
  failsWithOneLine(await lifeboat('put', '/tls/x', 'y', '--endpoints', ep, '--cacert', certs.ca), EXIT.FAILURE, ep, 'client certificate');
});

test('plaintext to the TLS port, and bad TLS file arguments, are one-line errors', async () => {
  failsWithOneLine(await lifeboat('member', 'list', '--endpoints', ep.replace('https://', 'http://'), '--dial-timeout', '1s'), EXIT.FAILURE, 'https://');
  failsWithOneLine(
    await lifeboat('member', 'list', '--endpoints', ep, '--cacert', path.join(certs.dir, 'missing.pem')),
    EXIT.USAGE,
    'cannot read --cacert',
    'no such file',
  );
  failsWithOneLine(
    await lifeboat('member', 'list', '--endpoints', ep, '--cacert', certs.ca, '--cert', certs.clientCert),
    EXIT.USAGE,
    '--cert and --key go together',
  );
  failsWithOneLine(
    await lifeboat('member', 'list', '--endpoints', ep, '--cert', certs.clientCert, '--key', certs.serverKey),
    EXIT.USAGE,
    'do not belong together',
  );
});
