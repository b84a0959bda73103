// Bad TLS settings stop `lifeboat server` with one line and exit 2 before
// anything is written: an https:// URL without a certificate, a certificate
// without its key, a missing key, a key of another certificate, a CA file that
// cannot be read or holds no certificate, --peer-cert-allowed-cn without peer
// certificate checks. The same from LIFEBOAT_* variables. The data dir stays
// absent, or as it was.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { makeCerts, type TestCerts } from '../support/certs.js';
import { freePorts } from '../support/ports.js';
import { BIN, run } from '../support/lifeboatCluster.js';
import { requireTool } from '../support/tools.js';

let certs: TestCerts;
let dir: string;
let client: string;
let peer: string;

before(async () => {
  requireTool('openssl');
  dir = mkdtempSync(path.join(os.tmpdir(), 'lifeboat-tls-config-'));
  mkdirSync(path.join(dir, 'certs'));
  certs = await makeCerts(path.join(dir, 'certs'));
  const [c, p] = await freePorts(2, 'tls-badConfig');
  client = `127.0.0.1:${c}`;
  peer = `127.0.0.1:${p}`;
});

after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function server(dataDir: string, args: string[], env: Record<string, string> = {}) {
  const base = [
    '--name',
    'm1',
    '--data-dir',
    dataDir,
    '--listen-peer-urls',
    `http://${peer}`,
    '--initial-advertise-peer-urls',
    `http://${peer}`,
    '--listen-client-urls',
    `http://${client}`,
    '--advertise-client-urls',
    `http://${client}`,
  ];
  // Later flags win: the cases override the URLs above.
  const clean: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('LIFEBOAT_')) clean[k] = v;
  return run(process.execPath, [BIN, 'server', ...withoutDuplicates([...base, ...args])], { env: { ...clean, ...env }, timeoutMs: 30_000 });
}

function withoutDuplicates(args: string[]): string[] {
  // oclif refuses a string flag given twice: keep the last of each.
  const out: string[] = [];
  const seen = new Map<string, number>();
  for (let i = 0; i < args.length; i++) {
    if (args[i].startsWith('--') && i + 1 < args.length && !args[i + 1].startsWith('--')) {
      const at = seen.get(args[i]);
      if (at !== undefined) out[at + 1] = args[i + 1];
      else {
        seen.set(args[i], out.length);
        out.push(args[i], args[i + 1]);
      }
      i++;
    } else out.push(args[i]);
  }
  return out;
}

test('bad TLS settings: one line, exit 2, and nothing written to the data dir', { timeout: 60_000 }, async () => {
  const p = (f: string) => path.join(certs.dir, f);
  writeFileSync(p('not-a-cert.pem'), 'hello\n');
  const httpsClient = ['--listen-client-urls', `https://${client}`, '--advertise-client-urls', `https://${client}`];
  const httpsPeer = ['--listen-peer-urls', `https://${peer}`, '--initial-advertise-peer-urls', `https://${peer}`];
  const pair = ['--cert-file', certs.serverCert, '--key-file', certs.serverKey];
  const cases: Array<{ what: string; args?: string[]; env?: Record<string, string>; mentions: string[] }> = [
    { what: 'https client URL without a certificate', args: httpsClient, mentions: ['--cert-file', `https://${client}`] },
    { what: 'https peer URL without a certificate', args: [...httpsPeer, ...pair], mentions: ['--peer-cert-file', `https://${peer}`] },
    {
      what: 'https metrics URL without a certificate',
      args: ['--listen-metrics-urls', `https://127.0.0.1:1`],
      mentions: ['--listen-metrics-urls', '--cert-file'],
    },
    { what: 'a certificate without its key', args: [...httpsClient, '--cert-file', certs.serverCert], mentions: ['--cert-file and --key-file go together'] },
    {
      what: 'a missing key file',
      args: [...httpsClient, '--cert-file', certs.serverCert, '--key-file', p('missing.key')],
      mentions: ['cannot read --key-file', 'no such file'],
    },
    {
      what: 'the key of another certificate',
      args: [...httpsClient, '--cert-file', certs.serverCert, '--key-file', certs.clientKey],
      mentions: ['do not belong together', certs.serverCert, certs.clientKey],
    },
    { what: 'an unreadable CA file', args: [...httpsClient, ...pair, '--trusted-ca-file', p('missing-ca.crt')], mentions: ['cannot read --trusted-ca-file'] },
    {
      what: 'a CA file with no certificate',
      args: [...httpsClient, ...pair, '--trusted-ca-file', p('not-a-cert.pem')],
      mentions: ['--trusted-ca-file', 'holds no PEM certificate'],
    },
    {
      what: 'a peer key from LIFEBOAT_PEER_KEY_FILE that does not match',
      args: httpsPeer,
      env: { LIFEBOAT_PEER_CERT_FILE: certs.serverCert, LIFEBOAT_PEER_KEY_FILE: certs.clientKey },
      mentions: ['--peer-cert-file', '--peer-key-file', 'do not belong together'],
    },
    {
      what: 'a missing CA file from LIFEBOAT_PEER_TRUSTED_CA_FILE',
      args: [...httpsPeer, '--peer-cert-file', certs.serverCert, '--peer-key-file', certs.serverKey],
      env: { LIFEBOAT_PEER_TRUSTED_CA_FILE: p('nope.crt') },
      mentions: ['cannot read --peer-trusted-ca-file'],
    },
    {
      what: '--peer-cert-allowed-cn without peer certificate checks',
      args: [...httpsPeer, '--peer-cert-file', certs.serverCert, '--peer-key-file', certs.serverKey, '--peer-cert-allowed-cn', 'x'],
      mentions: ['--peer-cert-allowed-cn', '--peer-client-cert-auth'],
    },
  ];
  // Half the cases on a data dir that does not exist, half on one that holds a file: both stay as they were.
  const results = await Promise.all(
    cases.map(async (c, i) => {
      const dataDir = path.join(dir, `case-${i}`);
      if (i % 2 === 1) {
        mkdirSync(dataDir);
        writeFileSync(path.join(dataDir, 'keep'), 'x');
      }
      const r = await server(dataDir, c.args ?? [], c.env);
      return { c, r, dataDir, i };
    }),
  );
  for (const { c, r, dataDir, i } of results) {
    assert.equal(r.code, 2, `${c.what}: exit ${r.code}; stderr: ${r.stderr}`);
    assert.equal(r.stdout, '', c.what);
    assert.match(r.stderr, /^[^\n]+\n$/, `${c.what}: one line: ${JSON.stringify(r.stderr)}`);
    for (const m of c.mentions) assert.ok(r.stderr.includes(m), `${c.what}: should mention ${JSON.stringify(m)}: ${r.stderr}`);
    if (i % 2 === 1) assert.deepEqual(readdirSync(dataDir), ['keep'], `${c.what}: data dir unchanged`);
    else assert.equal(existsSync(dataDir), false, `${c.what}: data dir not made`);
  }
});
