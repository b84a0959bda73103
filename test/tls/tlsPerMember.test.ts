// TLS per member in a quorum-loss recovery of Lifeboat members: each member has
// its own certificates (CN its name, an IP SAN for its own address 127.0.0.N).
// `lifeboat recover` finds the survivor's TLS in its hand-off env file (DIR.env,
// LIFEBOAT_*), refuses in one line before anything changes when one member's
// certificate does not name its address, and with the right files every member
// serves its own certificate and its env file names its own files.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { issueCert, makeCerts, servedCertificate, type TestCerts } from '../support/certs.js';
import { BIN, type MemberProc } from '../support/lifeboatCluster.js';
import { membersVar, playbookRun } from '../support/playbookRun.js';
import { stopProcessesUnder } from '../support/processes.js';
import { failsWithOneLine, requireTool, run, waitFor } from '../support/tools.js';
import { treeState } from '../recovery/treeState.js';
import { TlsCluster } from './tlsCluster.js';

const NAMES = ['m1', 'm2', 'm3'];

/** The CN of the certificate a TLS server at `url` presents. */
const servedCn = async (url: string, certs: TestCerts) => String((await servedCertificate(url, certs)).subject.CN);

describe('recovery of a Lifeboat cluster with a certificate per member', () => {
  let certs: TestCerts;
  let tc: TlsCluster;
  before(async () => {
    certs = await makeCerts(mkdtempSync(path.join(os.tmpdir(), 'lifeboat-tls-per-member-')));
    tc = await TlsCluster.create('tls-per-member', certs, 6);
  });
  after(async () => {
    if (tc) await stopProcessesUnder(tc.c.dir);
    await tc?.c.stopAll();
  });

  test("TLS found in the survivor's env file; a member whose certificate misses its address refused before anything changes; then each serves its own", async () => {
    const pki = path.join(tc.c.dir, 'pki');
    const hostOf = (i: number) => `127.0.0.${i + 1}`;
    for (const [i, name] of NAMES.entries()) {
      const own = path.join(pki, name);
      mkdirSync(own, { recursive: true });
      for (const side of ['server', 'peer']) {
        const c = await issueCert(certs, `${name}-${side}`, { cn: side === 'server' ? name : `${name}-peer`, sans: `IP:${hostOf(i)}` });
        copyFileSync(c.cert, path.join(own, `${side}.crt`));
        copyFileSync(c.key, path.join(own, `${side}.key`));
      }
      copyFileSync(certs.ca, path.join(own, 'ca.crt'));
    }
    const settings = (name: string): Array<[string, string]> => [
      ['cert-file', path.join(pki, name, 'server.crt')],
      ['key-file', path.join(pki, name, 'server.key')],
      ['trusted-ca-file', path.join(pki, name, 'ca.crt')],
      ['client-cert-auth', 'true'],
      ['peer-cert-file', path.join(pki, name, 'peer.crt')],
      ['peer-key-file', path.join(pki, name, 'peer.key')],
      ['peer-trusted-ca-file', path.join(pki, name, 'ca.crt')],
      ['peer-client-cert-auth', 'true'],
    ];
    // Each member on its own address.
    const onHost = (m: MemberProc, i: number) => {
      for (const k of ['peerUrl', 'clientUrl', 'client'] as const) m[k] = m[k].replace('127.0.0.1', hostOf(i));
      return m;
    };
    const old = NAMES.map((n, i) => onHost(tc.define(n), i));
    const initial = old.map((m) => `${m.name}=${m.peerUrl}`).join(',');
    for (const m of old)
      tc.c.spawn(m, [...settings(m.name).flatMap(([k, v]) => [`--${k}=${v}`]), '--initial-cluster', initial, '--initial-cluster-state', 'new']);
    await tc.waitStarted(3);
    assert.equal((await tc.ctl(old[0].client, 'put', '/registry/a', 'kept')).code, 0);
    await Promise.all([tc.c.kill(old[1]), tc.c.kill(old[2])]);
    await tc.c.kill(old[0], 'SIGTERM');
    // The survivor's env file, as a previous hand-off wrote it.
    writeFileSync(
      `${old[0].dataDir}.env`,
      [
        `LIFEBOAT_NAME=m1`,
        `LIFEBOAT_DATA_DIR=${old[0].dataDir}`,
        ...settings('m1').map(([k, v]) => `LIFEBOAT_${k.toUpperCase().replace(/-/g, '_')}=${v}`),
        '',
      ].join('\n'),
    );

    const fresh = NAMES.map((n, i) => onHost(tc.define(`${n}`), i));
    for (const m of fresh) m.dataDir = path.join(tc.c.dir, `${m.name}-new`);
    fresh[0].peerUrl = old[0].peerUrl; // the restored member keeps the survivor's (the plan's default)
    const recover = () =>
      run(
        process.execPath,
        [
          BIN,
          'recover',
          '--from-data-dir',
          old[0].dataDir,
          '--yes',
          '--reason',
          'test: TLS per member (lifeboat)',
          '--audit-db',
          path.join(tc.c.dir, 'audit.db'),
          '--set',
          `data-dir=${fresh[0].dataDir}`,
          '--set',
          `client-url=${fresh[0].clientUrl}`,
          '--set',
          `members=${membersVar(fresh.slice(1))}`,
          '--set',
          'stabilization=1s',
          '--cacert',
          certs.ca,
          '--cert',
          certs.clientCert,
          '--key',
          certs.clientKey,
        ],
        { env: { ...process.env, LIFEBOAT_HOST_ROOT: path.join(tc.c.dir, 'no-host-root') }, timeoutMs: 180_000 },
      );

    // m3's directory holds m2's client certificate and key: its client URL's address is not in it.
    const before = treeState(old[0].dataDir);
    const m3cert = path.join(pki, 'm3', 'server.crt');
    const [good, goodKey] = [readFileSync(m3cert), readFileSync(path.join(pki, 'm3', 'server.key'))];
    copyFileSync(path.join(pki, 'm2', 'server.crt'), m3cert);
    copyFileSync(path.join(pki, 'm2', 'server.key'), path.join(pki, 'm3', 'server.key'));
    failsWithOneLine(await recover(), 2, 'member m3', m3cert, 'IP SAN 127.0.0.3');
    assert.deepEqual(treeState(old[0].dataDir), before, "the survivor's data dir changed");
    for (const m of fresh) assert.ok(!existsSync(m.dataDir), `${m.dataDir} was created before the refusal`);

    // `playbook run` does not look for the survivor's TLS: https:// URLs without the variables are refused before the first step.
    const sets: Record<string, string> = {
      source: old[0].dataDir,
      'data-dir': fresh[0].dataDir,
      name: 'm1',
      'peer-url': old[0].peerUrl,
      'client-url': fresh[0].clientUrl,
      members: membersVar(fresh.slice(1)),
    };
    const bare = await playbookRun('recover-from-quorum-loss', sets, path.join(tc.c.dir, 'audit-bare.db'), {
      extra: ['--cacert', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey],
    });
    failsWithOneLine(bare, 2, 'member m1', 'is https:// but no certificate is given', 'cert-file, key-file', '{name}');
    assert.deepEqual(treeState(old[0].dataDir), before, "the survivor's data dir changed");
    for (const m of fresh) assert.ok(!existsSync(m.dataDir), `${m.dataDir} was created before the refusal`);

    writeFileSync(m3cert, good);
    writeFileSync(path.join(pki, 'm3', 'server.key'), goodKey);
    const r = await recover();
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.ok(r.stdout.includes(`TLS: the survivor's settings in ${old[0].dataDir}.env`), r.stdout);
    // Recorded with the run: what was found, and where.
    const auditDb = path.join(tc.c.dir, 'audit.db');
    const runs = JSON.parse((await run(process.execPath, [BIN, 'audit', 'list', '--audit-db', auditDb, '-w', 'json'])).stdout) as Array<{ id: string }>;
    const shown = JSON.parse((await run(process.execPath, [BIN, 'audit', 'show', runs[0].id, '--audit-db', auditDb, '-w', 'json'])).stdout) as {
      timeline: Array<{ kind?: string; data?: { tls?: { from?: string; sets?: Record<string, string> } } }>;
    };
    const found = shown.timeline.find((e) => e.kind === 'note' && e.data?.tls)?.data?.tls;
    assert.equal(found?.from, `${old[0].dataDir}.env`);
    assert.equal(found?.sets?.['peer-key-file'], path.join(pki, '{name}', 'peer.key'));
    for (const m of fresh) {
      assert.equal((await tc.ctl(m.client, 'get', '/registry/a', '--print-value-only', '--consistency=s')).stdout, 'kept\n');
      assert.equal(await servedCn(m.clientUrl, certs), m.name, `${m.name}'s client URL serves another member's certificate`);
      assert.equal(await servedCn(m.peerUrl, certs), `${m.name}-peer`, `${m.name}'s peer URL serves another member's certificate`);
      const env = readFileSync(`${m.dataDir}.env`, 'utf8');
      for (const [k, v] of settings(m.name)) assert.match(env, new RegExp(`^LIFEBOAT_${k.toUpperCase().replace(/-/g, '_')}=${v}$`, 'm'), env);
    }
  });
});

describe('lifeboat recover at a terminal, https:// URLs and no TLS settings of the survivor found', () => {
  let certs: TestCerts;
  let tc: TlsCluster;
  const session = `lifeboat-tls-${process.pid}`;
  const tmux = (...args: string[]) => execFileSync('tmux', args, { encoding: 'utf8' });
  const screen = () => tmux('capture-pane', '-t', session, '-p', '-S', '-200');
  before(async () => {
    requireTool('tmux');
    certs = await makeCerts(mkdtempSync(path.join(os.tmpdir(), 'lifeboat-tls-ask-')));
    tc = await TlsCluster.create('tls-per-member-ask', certs, 2);
  });
  after(async () => {
    try {
      tmux('kill-session', '-t', session);
    } catch {
      // already gone
    }
    if (tc) await stopProcessesUnder(tc.c.dir);
    await tc?.c.stopAll();
  });

  test('asks for the directory of each member’s certificates, and the member starts with its own', async () => {
    const own = path.join(tc.c.dir, 'pki', 'm1');
    mkdirSync(own, { recursive: true });
    for (const side of ['server', 'peer']) {
      const c = await issueCert(certs, `m1-${side}`, { cn: side === 'server' ? 'm1' : 'm1-peer', sans: 'IP:127.0.0.1' });
      copyFileSync(c.cert, path.join(own, `${side}.crt`));
      copyFileSync(c.key, path.join(own, `${side}.key`));
    }
    copyFileSync(certs.ca, path.join(own, 'ca.crt'));
    const [m1] = await tc.startFounders('m1');
    assert.equal((await tc.ctl(m1.client, 'put', 'asked', 'yes')).code, 0);
    await tc.c.kill(m1, 'SIGTERM');

    const fresh = tc.define('r1');
    fresh.dataDir = path.join(tc.c.dir, 'm1-new');
    const auditDb = path.join(tc.c.dir, 'audit.db');
    const sets = [
      `data-dir=${fresh.dataDir}`,
      `client-url=${fresh.clientUrl}`,
      'members=',
      'assume-dead=',
      'discard-uncommitted=false',
      'stabilization=1s',
      'remote=false',
    ].flatMap((s) => ['--set', s]);
    const command = [process.execPath, BIN, 'recover', '--from-data-dir', m1.dataDir, '--yes', '--reason', 'tls-ask', '--audit-db', auditDb, ...sets];
    command.push('--cacert', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey);
    const empty = path.join(tc.c.dir, 'empty-root');
    tmux('new-session', '-d', '-s', session, '-x', '250', '-y', '50', `LIFEBOAT_HOST_ROOT=${empty} ${command.join(' ')}; echo EXIT=$?; sleep 120`);
    await waitFor('the TLS question', () => Promise.resolve(/The members' URLs are https:\/\/: directory of each member's certificates/.test(screen())), {
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    tmux('send-keys', '-t', session, path.join(tc.c.dir, 'pki', '{name}'), 'Enter');
    const out = await waitFor('the run to end', () => Promise.resolve(/EXIT=\d+/.test(screen()) ? screen() : undefined), {
      timeoutMs: 90_000,
      intervalMs: 500,
    });
    assert.match(out, /EXIT=0/, out);
    assert.equal(await servedCn(fresh.clientUrl, certs), 'm1');
    assert.equal((await tc.ctl(fresh.client, 'get', 'asked', '--print-value-only')).stdout, 'yes\n');
    assert.match(readFileSync(`${fresh.dataDir}.env`, 'utf8'), new RegExp(`^LIFEBOAT_PEER_KEY_FILE=${own}/peer.key$`, 'm'));
  });
});
