// TLS per member in a quorum-loss recovery of real etcd 3.4 with client and peer
// mutual TLS: each member has its own certificates (CN its name, an IP SAN for its
// own loopback address 127.0.0.N). `lifeboat recover` finds the survivor's TLS in
// its systemd unit (under LIFEBOAT_HOST_ROOT, the host's root), refuses in one
// line before anything changes when the URLs are https:// and no TLS is known,
// and when one member's certificate does not name its address; with the right
// files every member serves its own certificate and its env file says so.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { issueCert, makeCerts, servedCertificate, type TestCerts } from '../support/certs.js';
import { membersVar } from '../support/playbookRun.js';
import { freePorts } from '../support/ports.js';
import { stopProcessesUnder } from '../support/processes.js';
import { etcdctl, failsWithOneLine, requireEtcdTools, requireTool, ROOT, run, stopProcess, waitFor } from '../support/tools.js';
import { treeState } from './treeState.js';

const NAMES = ['m1', 'm2', 'm3'];
const host = (i: number) => `127.0.0.${i + 1}`;

describe('recovery of an etcd cluster with a certificate per member', () => {
  let dir: string;
  let certs: TestCerts;
  const procs: ChildProcess[] = [];
  before(async () => {
    requireEtcdTools();
    requireTool('openssl');
    dir = mkdtempSync(path.join(os.tmpdir(), 'lifeboat-tls-per-member-'));
    mkdirSync(path.join(dir, 'ca'));
    certs = await makeCerts(path.join(dir, 'ca'));
  });
  after(async () => {
    for (const p of procs) await stopProcess(p);
    if (dir) await stopProcessesUnder(dir);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('TLS found in the survivor unit; unknown TLS and a SAN that misses a member refused before anything changes; each member then serves its own certificate', async () => {
    // Each member's own files, as kubeadm lays them out: pki/NAME/{server,peer}.{crt,key}, ca.crt.
    const pki = path.join(dir, 'pki');
    for (const [i, name] of NAMES.entries()) {
      const own = path.join(pki, name);
      mkdirSync(own, { recursive: true });
      const server = await issueCert(certs, `${name}-server`, { cn: name, sans: `IP:${host(i)}` });
      // etcd checks a dialling peer's address against its certificate's IP SANs, and every member here dials from 127.0.0.1.
      const peer = await issueCert(certs, `${name}-peer`, { cn: `${name}-peer`, sans: `IP:${host(i)}${i > 0 ? ',IP:127.0.0.1' : ''}` });
      copyFileSync(server.cert, path.join(own, 'server.crt'));
      copyFileSync(server.key, path.join(own, 'server.key'));
      copyFileSync(peer.cert, path.join(own, 'peer.crt'));
      copyFileSync(peer.key, path.join(own, 'peer.key'));
      copyFileSync(certs.ca, path.join(own, 'ca.crt'));
    }
    const tlsFlags = (name: string) => {
      const own = path.join(pki, name);
      return [
        '--cert-file',
        `${own}/server.crt`,
        '--key-file',
        `${own}/server.key`,
        '--trusted-ca-file',
        `${own}/ca.crt`,
        '--client-cert-auth',
        '--peer-cert-file',
        `${own}/peer.crt`,
        '--peer-key-file',
        `${own}/peer.key`,
        '--peer-trusted-ca-file',
        `${own}/ca.crt`,
        '--peer-client-cert-auth',
      ];
    };
    const clientTls = ['--cacert', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey];

    // The old cluster: 3 members, each on its own address with its own certificates.
    const ports = await freePorts(12, 'recovery/tlsPerMember');
    const old = NAMES.map((name, i) => ({
      name,
      dataDir: path.join(dir, `${name}.etcd`),
      clientUrl: `https://${host(i)}:${ports[2 * i]}`,
      peerUrl: `https://${host(i)}:${ports[2 * i + 1]}`,
    }));
    const initial = old.map((m) => `${m.name}=${m.peerUrl}`).join(',');
    const argsOf = (m: (typeof old)[number]) => [
      '--name',
      m.name,
      '--data-dir',
      m.dataDir,
      '--listen-client-urls',
      m.clientUrl,
      '--advertise-client-urls',
      m.clientUrl,
      '--listen-peer-urls',
      m.peerUrl,
      '--initial-advertise-peer-urls',
      m.peerUrl,
      '--initial-cluster',
      initial,
      '--initial-cluster-state',
      'new',
      '--initial-cluster-token',
      `tls-per-member-${process.pid}`,
      ...tlsFlags(m.name),
    ];
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('ETCD')) env[k] = v;
    for (const m of old) {
      const fd = openSync(path.join(dir, `${m.name}.log`), 'a');
      procs.push(spawn('etcd', argsOf(m), { env, stdio: ['ignore', fd, fd] }));
      closeSync(fd);
    }
    const endpoints = old.map((m) => m.clientUrl).join(',');
    await waitFor('the old cluster to be healthy', async () => (await etcdctl('--endpoints', endpoints, ...clientTls, 'endpoint', 'health')).code === 0, {
      timeoutMs: 30_000,
    });
    for (let k = 0; k < 20; k++) assert.equal((await etcdctl('--endpoints', endpoints, ...clientTls, 'put', `/registry/k${k}`, `v${k}`)).code, 0);
    // Two members and their disks lost; the survivor stopped.
    procs[1].kill('SIGKILL');
    procs[2].kill('SIGKILL');
    await Promise.all([stopProcess(procs[1]), stopProcess(procs[2])]);
    await stopProcess(procs[0]);
    rmSync(old[1].dataDir, { recursive: true });
    rmSync(old[2].dataDir, { recursive: true });

    // The recovered members: the same names and addresses, new ports and data dirs.
    const fresh = NAMES.map((name, i) => ({
      name,
      dataDir: path.join(dir, `${name}-new`),
      clientUrl: `https://${host(i)}:${ports[6 + 2 * i]}`,
      // The restored member keeps the survivor's peer URL (the plan's default).
      peerUrl: i === 0 ? old[0].peerUrl : `https://${host(i)}:${ports[7 + 2 * i]}`,
    }));
    const hostRoot = path.join(dir, 'host');
    const recover = () =>
      run(
        process.execPath,
        [
          path.join(ROOT, 'bin', 'run.js'),
          'recover',
          '--from-data-dir',
          old[0].dataDir,
          '--yes',
          '--reason',
          'test: TLS per member',
          '--audit-db',
          path.join(dir, 'audit.db'),
          '--set',
          `data-dir=${fresh[0].dataDir}`,
          '--set',
          `client-url=${fresh[0].clientUrl}`,
          '--set',
          `members=${membersVar(fresh.slice(1))}`,
          '--set',
          'stabilization=1s',
          ...clientTls,
        ],
        { env: { ...process.env, LIFEBOAT_HOST_ROOT: hostRoot }, timeoutMs: 240_000 },
      );
    const survivorBefore = treeState(old[0].dataDir);
    const untouched = () => {
      assert.deepEqual(treeState(old[0].dataDir), survivorBefore, "the survivor's data dir changed");
      for (const m of fresh) assert.ok(!existsSync(m.dataDir), `${m.dataDir} was created before the refusal`);
    };

    // https:// URLs and no TLS settings of the survivor's anywhere: refused, naming the variables to set.
    failsWithOneLine(await recover(), 2, 'https://', 'cert-file', 'peer-key-file', 'trusted-ca-file', `{name}`);
    untouched();

    // The survivor's unit, as the operator's host has it: its own flags name its certificates.
    const unitDir = path.join(hostRoot, 'etc', 'systemd', 'system');
    mkdirSync(unitDir, { recursive: true });
    writeFileSync(
      path.join(unitDir, 'etcd.service'),
      ['[Unit]', 'Description=etcd', '', '[Service]', 'Type=notify', `ExecStart=/usr/bin/etcd ${argsOf(old[0]).join(' \\\n  ')}`, ''].join('\n'),
    );
    // m3's directory holds m2's peer certificate (and key): it does not name 127.0.0.3.
    const m3peer = path.join(pki, 'm3', 'peer.crt');
    const m3peerKey = path.join(pki, 'm3', 'peer.key');
    const [goodPeer, goodKey] = [readFileSync(m3peer), readFileSync(m3peerKey)];
    copyFileSync(path.join(pki, 'm2', 'peer.crt'), m3peer);
    copyFileSync(path.join(pki, 'm2', 'peer.key'), m3peerKey);
    failsWithOneLine(await recover(), 2, 'member m3', m3peer, 'IP SAN 127.0.0.3');
    untouched();
    // A certificate with another's key: refused the same way.
    writeFileSync(m3peer, goodPeer);
    failsWithOneLine(await recover(), 2, 'member m3', m3peerKey, 'not the key of');
    untouched();

    // The right files: recovered, every member serving its own certificate.
    writeFileSync(m3peerKey, goodKey);
    const r = await recover();
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, new RegExp(`TLS: the survivor's settings in ${unitDir}/etcd.service, for every member: cert-file=${pki}/\\{name\\}/server.crt`));
    const newEndpoints = fresh.map((m) => m.clientUrl).join(',');
    const list = await etcdctl('--endpoints', newEndpoints, ...clientTls, 'member', 'list');
    assert.equal(list.stdout.split('\n').filter((l) => l.includes(', started, ') && l.endsWith(', false')).length, 3, list.stdout);
    for (const [i, m] of fresh.entries()) {
      assert.equal((await etcdctl('--endpoints', m.clientUrl, ...clientTls, 'get', '/registry/k19', '--print-value-only', '--consistency=s')).stdout, 'v19\n');
      const client = await servedCertificate(m.clientUrl, certs);
      assert.equal(client.subject.CN, m.name, `${m.name}'s client URL serves ${String(client.subject.CN)}'s certificate`);
      assert.equal(client.subjectaltname, `IP Address:${host(i)}`);
      const peer = await servedCertificate(m.peerUrl, certs);
      assert.equal(peer.subject.CN, `${m.name}-peer`, `${m.name}'s peer URL serves ${String(peer.subject.CN)}'s certificate`);
      // The hand-off env file names the member's own files, and no other member's.
      const envFile = readFileSync(`${m.dataDir}.env`, 'utf8');
      for (const [k, f] of [
        ['ETCD_CERT_FILE', 'server.crt'],
        ['ETCD_KEY_FILE', 'server.key'],
        ['ETCD_PEER_CERT_FILE', 'peer.crt'],
        ['ETCD_PEER_KEY_FILE', 'peer.key'],
        ['ETCD_TRUSTED_CA_FILE', 'ca.crt'],
      ])
        assert.match(envFile, new RegExp(`^${k}=${path.join(pki, m.name, f)}$`, 'm'), envFile);
      for (const other of NAMES.filter((n) => n !== m.name)) assert.ok(!envFile.includes(path.join(pki, other)), `${m.name}'s env file names ${other}'s files`);
    }
  });
});
