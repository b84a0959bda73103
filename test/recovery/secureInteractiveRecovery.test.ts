// The recovery an SRE walks on a first day, end to end: a 3-member real etcd 3.4
// cluster with client and peer mutual TLS (a certificate per member) and auth (root
// and a read-only user), 2,000 keys under /registry/; two members killed and their
// disks gone, the third stopped; then the interactive `lifeboat recover` in a real
// terminal (tmux). Every question, the password first, is on the captured screen
// before it is answered. The recovered cluster holds every key, each member serves
// its own certificate (openssl s_client), auth is still enforced (the read-only
// user reads and cannot write, nobody anonymous gets in), and its membership is
// exactly the three chosen members, in `member list` and in a saved snapshot's own
// member records.
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, copyFileSync, mkdirSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { issueCert, makeCerts, type TestCerts } from '../support/certs.js';
import { BIN, waitFor } from '../support/lifeboatCluster.js';
import { freePorts } from '../support/ports.js';
import { stopProcessesUnder } from '../support/processes.js';
import { etcdctl, lifeboat, requireEtcdTools, requireTool, run, stopProcess } from '../support/tools.js';

const NAMES = ['infra1', 'infra2', 'infra3'];
const KEYS = 2000;
const ROOT_PW = 'r00t-Pw-56';
const READER_PW = 'reader-pw-56';
const tmux = (...args: string[]) => execFileSync('tmux', args, { encoding: 'utf8' });
/** The pane as the operator sees it, wrapped lines joined. */
const screen = (s: string) => tmux('capture-pane', '-t', s, '-p', '-J', '-S', '-400');

/** The subject CN of the certificate a TLS server at `url` presents (openssl s_client, as an operator checks it). */
async function servedCn(url: string, certs: TestCerts): Promise<string> {
  const u = new URL(url);
  const r = await run(
    'openssl',
    ['s_client', '-connect', `${u.hostname}:${u.port}`, '-CAfile', certs.ca, '-cert', certs.clientCert, '-key', certs.clientKey, '-verify_return_error'],
    { input: '', timeoutMs: 15_000 },
  );
  const cn = /^subject=.*CN ?= ?([\w.-]+)/m.exec(r.stdout)?.[1];
  assert.ok(cn, `no certificate subject from ${url}: ${r.stdout.slice(0, 400)} ${r.stderr.slice(0, 400)}`);
  return cn;
}

describe('the interactive recovery of a secure real etcd cluster', () => {
  let dir: string;
  let certs: TestCerts;
  const procs: ChildProcess[] = [];
  const session = `lifeboat-secure-${process.pid}`;
  before(async () => {
    requireEtcdTools();
    requireTool('openssl');
    requireTool('tmux');
    dir = mkdtempSync(path.join(os.tmpdir(), 'lifeboat-secure-recovery-'));
    mkdirSync(path.join(dir, 'ca'));
    certs = await makeCerts(path.join(dir, 'ca'));
  });
  after(async () => {
    try {
      tmux('kill-session', '-t', session);
    } catch {
      // already gone
    }
    for (const p of procs) await stopProcess(p);
    if (dir) await stopProcessesUnder(dir);
    if (dir && !process.env.LIFEBOAT_KEEP_TEST_DIRS) rmSync(dir, { recursive: true, force: true });
  });

  test(
    'every question on screen before it is answered; every key, each member its own certificate, auth enforced, exactly three members',
    { timeout: 600_000 },
    async () => {
      // Each member's own files, as kubeadm lays them out: pki/NAME/{server,peer}.{crt,key}, ca.crt; CN the member's name.
      const pki = path.join(dir, 'pki');
      for (const name of NAMES) {
        const own = path.join(pki, name);
        mkdirSync(own, { recursive: true });
        const cert = await issueCert(certs, name, { cn: name });
        for (const kind of ['server', 'peer']) {
          copyFileSync(cert.cert, path.join(own, `${kind}.crt`));
          copyFileSync(cert.key, path.join(own, `${kind}.key`));
        }
        copyFileSync(certs.ca, path.join(own, 'ca.crt'));
      }
      const ports = await freePorts(6, 'recovery/secureInteractiveRecovery');
      const old = NAMES.map((name, i) => ({
        name,
        dataDir: path.join(dir, `${name}.etcd`),
        clientUrl: `https://127.0.0.1:${ports[2 * i]}`,
        peerUrl: `https://127.0.0.1:${ports[2 * i + 1]}`,
      }));
      const initial = old.map((m) => `${m.name}=${m.peerUrl}`).join(',');
      const started = old.map((m) => {
        const own = path.join(pki, m.name);
        // etcd's flags as its unit would give them; nothing written where the recovery could find it, so the session asks for TLS.
        const args = [
          ...[
            '--name',
            m.name,
            '--data-dir',
            m.dataDir,
            '--initial-cluster',
            initial,
            '--initial-cluster-state',
            'new',
            '--initial-cluster-token',
            `secure-${process.pid}`,
          ],
          ...[
            '--listen-client-urls',
            m.clientUrl,
            '--advertise-client-urls',
            m.clientUrl,
            '--listen-peer-urls',
            m.peerUrl,
            '--initial-advertise-peer-urls',
            m.peerUrl,
          ],
          ...['--cert-file', `${own}/server.crt`, '--key-file', `${own}/server.key`, '--trusted-ca-file', `${own}/ca.crt`, '--client-cert-auth'],
          ...[
            '--peer-cert-file',
            `${own}/peer.crt`,
            '--peer-key-file',
            `${own}/peer.key`,
            '--peer-trusted-ca-file',
            `${own}/ca.crt`,
            '--peer-client-cert-auth',
          ],
        ];
        const log = openSync(path.join(dir, `${m.name}.log`), 'a');
        const p = spawn('etcd', args, { stdio: ['ignore', log, log] });
        closeSync(log);
        procs.push(p);
        return p;
      });
      const clientTls = ['--cacert', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey];
      const endpoints = old.map((m) => m.clientUrl).join(',');
      const ctl = (...args: string[]) => etcdctl('--endpoints', endpoints, ...clientTls, '--command-timeout', '20s', ...args);
      await waitFor('the old cluster to be healthy', async () => (await ctl('endpoint', 'health')).code === 0, 60_000, 500);

      // Auth: root, and a read-only user of /registry/.
      for (const args of [
        ['user', 'add', `root:${ROOT_PW}`],
        ['user', 'grant-role', 'root', 'root'],
        ['role', 'add', 'registry-read'],
        ['role', 'grant-permission', 'registry-read', '--prefix=true', 'read', '/registry/'],
        ['user', 'add', `reader:${READER_PW}`],
        ['user', 'grant-role', 'reader', 'registry-read'],
        ['auth', 'enable'],
      ]) {
        const r = await ctl(...args);
        assert.equal(r.code, 0, `etcdctl ${args[0]} ${args[1]}: ${r.stderr}`);
      }
      const asRoot = ['--user', `root:${ROOT_PW}`];
      // 2,000 keys under /registry/, in transactions of 100 puts.
      for (let i = 0; i < KEYS; i += 100) {
        const ops = Array.from({ length: 100 }, (_, j) => `put /registry/pods/p${String(i + j).padStart(5, '0')} v${i + j}`).join('\n');
        const r = await run('etcdctl', ['--endpoints', endpoints, ...clientTls, ...asRoot, 'txn'], { input: `\n${ops}\n\n\n`, timeoutMs: 30_000 });
        assert.equal(r.code, 0, r.stderr);
      }
      /** The keys under /registry/, as etcdctl 3.4 lists them (it has no --count-only). */
      const keys = (r: { stdout: string }) => r.stdout.split('\n').filter((l) => l.startsWith('/registry/')).length;
      assert.equal(keys(await ctl(...asRoot, 'get', '/registry/', '--prefix', '--keys-only')), KEYS);

      // Two members killed for good, their disks gone; the third stopped.
      for (const i of [1, 2]) {
        started[i].kill('SIGKILL');
        await new Promise((r) => started[i].once('exit', r));
        rmSync(old[i].dataDir, { recursive: true, force: true });
      }
      await stopProcess(started[0]);

      // The interactive session, as the operator runs it: client TLS and the user on the command line, the password asked.
      const auditDb = path.join(dir, 'audit.db');
      const words = [process.execPath, BIN, 'recover', '--user', 'root', ...clientTls, '--audit-db', auditDb];
      tmux(
        'new-session',
        '-d',
        '-s',
        session,
        '-x',
        '220',
        '-y',
        '60',
        `env -u LIFEBOAT_PASSWORD -u ETCDCTL_PASSWORD ${words.join(' ')}; echo EXIT=$?; sleep 300`,
      );
      const newDir = path.join(dir, 'infra1-recovered');
      // What the operator answers, by question; each must be on screen before it is answered, and is answered once.
      const answers: Array<{ question: RegExp; keys: string; secret?: boolean }> = [
        { question: /Password of root:/, keys: ROOT_PW, secret: true },
        { question: /Data dirs of the stopped survivors/, keys: old[0].dataDir },
        { question: /Recover from .*\? \(y\/N\)/, keys: 'y' },
        { question: /directory of each member's certificates/, keys: `${pki}/{name}` },
        { question: /New data dir for the recovered member/, keys: newDir },
        { question: /Client URL of the recovered member/, keys: '' },
        { question: /Members to re-add|Re-add these 2/, keys: '' },
        { question: /Old member IDs to treat as dead/, keys: '' },
        { question: /Drop the entries past the survivor's commit index/, keys: '' },
        { question: /How long must a learner stay caught up/, keys: '2s' },
        { question: /started on other hosts/, keys: '' },
        { question: /Why are you running this playbook/, keys: 'INC-56: infra2 and infra3 lost' },
        { question: /Build a NEW one-member cluster .*\(y\/N\)/, keys: 'y' },
        // infra2 and infra3 were on "other hosts" (their data dirs were not given): each is confirmed fenced there.
        { question: /Has infra2 \(\w+\) been fenced on/, keys: 'y' },
        { question: /Has infra3 \(\w+\) been fenced on/, keys: 'y' },
      ];
      const answered = new Set<number>();
      const deadline = Date.now() + 420_000;
      let out = '';
      for (let polls = 0; Date.now() < deadline && polls < 5000; polls++) {
        out = screen(session);
        if (/EXIT=\d+/.test(out)) break;
        // The question waiting now: the last line that asks (inquirer's "? "), among the screen's last lines.
        const tail = out.trimEnd().split('\n').slice(-14);
        const asking = [...tail].reverse().find((l) => /^\? /.test(l));
        const i = asking === undefined ? -1 : answers.findIndex((a, n) => !answered.has(n) && a.question.test(asking));
        if (i >= 0) {
          answered.add(i);
          if (answers[i].secret) {
            // The password is asked up front: the first question, before any step.
            assert.equal(answered.size, 1, `questions before the password:\n${out}`);
            assert.doesNotMatch(out, /inspect-sources|Running playbook/, `a step started before the password was asked:\n${out}`);
            tmux('send-keys', '-t', session, '-l', answers[i].keys);
          } else if (answers[i].keys !== '') tmux('send-keys', '-t', session, '-l', answers[i].keys);
          tmux('send-keys', '-t', session, 'Enter');
        }
        await new Promise((r) => setTimeout(r, 250));
      }
      assert.match(out, /EXIT=0/, `the session did not succeed; the screen:\n${out}`);
      for (const [n, a] of answers.entries()) {
        // The members question and the client URL take their defaults; every other question must have been seen.
        if (!answered.has(n) && !/Members to re-add|Client URL/.test(a.question.source)) assert.fail(`never asked: ${a.question}\n${out}`);
      }
      assert.ok(!out.includes(ROOT_PW), 'the password was echoed on the screen');
      assert.equal(out.match(/Password of root/g)?.length, 1, `the password was asked more than once:\n${out}`);

      // Every key, through the recovered members, as root.
      const newEndpoints = old.map((m) => m.clientUrl).join(',');
      const after = (...args: string[]) => etcdctl('--endpoints', newEndpoints, ...clientTls, '--command-timeout', '20s', ...args);
      const got = await after(...asRoot, 'get', '/registry/', '--prefix', '--keys-only');
      assert.equal(keys(got), KEYS, got.stderr);

      // Each member serves its own certificate, on its client and its peer URL.
      for (const m of old) {
        assert.equal(await servedCn(m.clientUrl, certs), m.name, `${m.name}'s client URL`);
        assert.equal(await servedCn(m.peerUrl, certs), m.name, `${m.name}'s peer URL`);
      }

      // Auth is enforced: nobody anonymous, the reader reads /registry/ and cannot write.
      const anonymous = await after('get', '/registry/pods/p00001');
      assert.notEqual(anonymous.code, 0, 'an anonymous read succeeded');
      const read = await after('--user', `reader:${READER_PW}`, 'get', '/registry/pods/p00001', '--print-value-only');
      assert.equal(read.stdout.trim(), 'v1', read.stderr);
      const write = await after('--user', `reader:${READER_PW}`, 'put', '/registry/pods/p00001', 'x');
      assert.notEqual(write.code, 0, 'the read-only user wrote');
      assert.match(write.stderr, /permission denied/);

      // Exactly the three chosen members: live, and in a saved snapshot's own member records.
      const list = await after(...asRoot, 'member', 'list', '-w', 'json');
      const members = (JSON.parse(list.stdout) as { members: Array<{ name: string; isLearner?: boolean }> }).members;
      assert.deepEqual(members.map((m) => m.name).sort(), NAMES, list.stdout);
      assert.ok(
        members.every((m) => !m.isLearner),
        list.stdout,
      );
      const snap = path.join(dir, 'after.db');
      const save = await lifeboat('snapshot', 'save', snap, '--endpoints', old[0].clientUrl, ...clientTls, '--user', 'root', '--password', ROOT_PW);
      assert.equal(save.code, 0, save.stderr);
      const status = await lifeboat('snapshot', 'status', snap, '-w', 'json');
      const recorded = JSON.stringify(JSON.parse(status.stdout));
      for (const name of NAMES) assert.ok(recorded.includes(`"${name}"`), `${name} missing from the snapshot's members: ${recorded}`);
      assert.doesNotMatch(recorded, /lifeboat-replay/, recorded);
      const names = recorded.match(/"name":"[^"]*"/g) ?? [];
      assert.equal(new Set(names).size, 3, `the snapshot records ${names.join(', ')}`);
    },
  );
});
