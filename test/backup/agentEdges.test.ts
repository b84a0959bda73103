// `lifeboat backup run` at its edges:
// - the member serving its watch loses its leader (the other two of three
//   stopped): WithRequireLeader has the member cancel the watch, the agent says
//   so and reconnects, and once the cluster is back every revision is stored,
//   once, with no gap;
// - the first full of an empty cluster is at revision 1 (etcd's empty keyspace),
//   so the chain goes on from 2 and a restart resumes it; the agent runs from its
//   own bundle (dist/backup-run.cjs), without oclif, and a file store's without
//   the S3 SDK;
// - against the S3 server (which checks SigV4 signatures and lists multipart
//   uploads, test/support/s3Front.ts): a wrong secret is refused at start in
//   one line (exit 3); with the right one the upload a killed agent left half
//   done is aborted, a fresh one and one outside the store's prefix are not;
// - a lock left by a dead agent on another host (its own UTS namespace) is
//   refused naming that host and start time, and taken with --force.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { CreateMultipartUploadCommand, ListMultipartUploadsCommand, S3Client, UploadPartCommand } from '@aws-sdk/client-s3';
import { readCatalog } from '../../src/backup/catalog.js';
import { FileStore } from '../../src/backup/fileStore.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { BIN, etcdctl, run, waitFor } from '../support/lifeboatCluster.js';
import { startS3Server, type S3Server } from '../support/s3Server.js';
import { startAgent, type Agent } from './agentScenario.js';

// The tests' own SDK clients: Lifeboat supports Node 20, the SDK's warning that it will not is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const waitLine = (a: Agent, re: RegExp, timeoutMs = 30_000, from = 0) =>
  waitFor(
    `${re}`,
    () => {
      if (a.proc.exitCode !== null) throw new Error(`the agent exited (${a.proc.exitCode}): ${a.lines.slice(-5).join(' | ')}`);
      return a.lines.slice(from).find((l) => re.test(l));
    },
    timeoutMs,
  );

async function stop(a: Agent | undefined): Promise<void> {
  if (!a || a.proc.exitCode !== null || a.proc.signalCode !== null) return;
  a.proc.kill('SIGTERM');
  const t = setTimeout(() => a.proc.kill('SIGKILL'), 20_000);
  await a.exit;
  clearTimeout(t);
}

/** The stored chain of the store's one cluster: one full, then segments without a hole or an overlap up to `through`. */
async function assertWholeChain(store: FileStore, through: number): Promise<void> {
  const c = await waitFor(`revisions through ${through} stored`, async () => {
    const cat = (await readCatalog(store)).clusters;
    const last = cat[0]?.segments.at(-1)?.toRevision ?? 0;
    return cat.length === 1 && last >= through && cat[0];
  });
  assert.deepEqual(c.gaps, []);
  assert.deepEqual(c.holes, []);
  let next = c.fulls[0].revision + 1;
  for (const s of c.segments) {
    assert.equal(s.fromRevision, next, `${s.object} starts where the one before ends`);
    assert.equal(s.revisions, s.toRevision - s.fromRevision + 1, `${s.object}: every revision of its range, once`);
    next = s.toRevision + 1;
  }
}

interface FileStoreRun {
  cluster: EtcdCluster;
  dir: string;
  storeUrl: string;
  store: FileStore;
  /** the agent the test runs, killed at the end if it still runs */
  agent?: Agent;
}

/** An etcd cluster of `size` and a file store in a temp dir for `body`; afterwards its agent killed, the cluster stopped, the dir removed. */
async function withFileStore(size: number, seed: string, body: (r: FileStoreRun) => Promise<void>): Promise<void> {
  const cluster = await EtcdCluster.start({ size, portSeed: seed });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `lifeboat-${seed}-`));
  let r: FileStoreRun | undefined;
  try {
    const storeDir = path.join(dir, 'store');
    fs.mkdirSync(storeDir);
    const storeUrl = pathToFileURL(storeDir).href;
    r = { cluster, dir, storeUrl, store: new FileStore(storeUrl, storeDir) };
    await body(r);
  } finally {
    if (r?.agent?.proc.exitCode === null) r.agent.proc.kill('SIGKILL');
    await cluster.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('the member serving the watch loses its leader: the watch is cancelled, the agent says so and moves on; no revision is lost', { timeout: 180_000 }, () =>
  withFileStore(3, 'agentEdges-leader', async (r) => {
    const { cluster, dir, store } = r;
    const all = cluster.endpoints;
    for (let i = 0; i < 5; i++) assert.equal((await etcdctl(all, 'put', `before/${i}`, 'x')).code, 0);
    const a = (r.agent = startAgent(['--endpoints', all, '--store', r.storeUrl, '--spool-dir', path.join(dir, 'spool'), '--delta-interval', '300ms']));
    const served = /watching (\S+) from revision/.exec(await waitLine(a, /watching \S+ from revision/))![1];
    const member = cluster.members.find((m) => cluster.endpointOf(m) === served)!;
    assert.ok(member, `${served} is one of ${all}`);
    assert.equal((await etcdctl(served, 'put', 'before/last', 'x')).code, 0);
    const lastBefore = Number(JSON.parse((await etcdctl(served, 'get', 'before/last', '-w', 'json')).stdout).header.revision);
    await assertWholeChain(store, lastBefore);

    // The other two stop: the served member is up but has no leader.
    const others = cluster.members.filter((m) => m !== member);
    const seen = a.lines.length;
    for (const m of others) await cluster.stopMember(m);
    await waitLine(a, /watch: .*no leader.*; reconnecting/, 30_000, seen);

    for (const m of others) cluster.restart(m);
    for (const m of others) await cluster.waitReady(m);
    for (let i = 0; i < 5; i++) assert.equal((await etcdctl(all, 'put', `after/${i}`, 'x')).code, 0);
    const head = Number(JSON.parse((await etcdctl(all, 'get', 'after/4', '-w', 'json')).stdout).header.revision);
    await waitLine(a, new RegExp(`watching \\S+ from revision ${lastBefore + 1}$`), 60_000, seen);
    await assertWholeChain(store, head);
    assert.ok(!a.lines.some((l) => /GAP/.test(l)), a.lines.join('\n'));
    await stop(a);
    assert.equal(a.proc.exitCode, 0);
  }),
);

test(
  'the first full of an empty cluster is at revision 1: the chain goes on from revision 2, and a restart resumes it; the agent loads neither oclif nor an ES module, nor the S3 SDK for a file store',
  { timeout: 90_000 },
  () =>
    withFileStore(1, 'agentEdges-empty', async (r) => {
      const { cluster, dir, store } = r;
      const ep = cluster.endpoints;
      const args = ['--endpoints', ep, '--store', r.storeUrl, '--spool-dir', path.join(dir, 'spool'), '--delta-interval', '300ms'];
      // NODE_DEBUG says each CommonJS module loaded (MODULE) and each ES module (ESM).
      let agent = (r.agent = startAgent(args, { NODE_DEBUG: 'module,esm' }));
      await waitLine(agent, /full \(first full\) at revision 1: 0 keys/);
      await waitLine(agent, /watching \S+ from revision 2$/);
      const loaded = agent.lines.filter((l) => /^(MODULE|ESM) \d+:/.test(l));
      assert.ok(
        loaded.some((l) => l.includes('backup-run.cjs')),
        'backup run ran from dist/backup-run.cjs',
      );
      assert.deepEqual(loaded.filter((l) => /@aws-sdk|oclif|^ESM/.test(l)).slice(0, 5), [], 'the agent loaded what it does not use');
      assert.equal((await etcdctl(ep, 'put', 'a', '1')).code, 0);
      await assertWholeChain(store, 2);
      await stop(agent);

      agent = r.agent = startAgent(args);
      await waitLine(agent, /resuming after revision 2 \(last full at revision 1\)/);
      await waitLine(agent, /watching \S+ from revision 3$/);
      assert.equal((await etcdctl(ep, 'put', 'b', '2')).code, 0);
      await assertWholeChain(store, 3);
      assert.ok(!agent.lines.some((l) => /full \(/.test(l)), `no second full: ${agent.lines.join(' | ')}`);
      const c = (await readCatalog(store)).clusters[0];
      assert.deepEqual(
        c.fulls.map((f) => [f.revision, f.keyCount]),
        [[1, 0]],
      );
      await stop(agent);
    }),
);

describe('backup run against an S3 server that checks signatures and lists uploads', () => {
  let cluster: EtcdCluster;
  let s3: S3Server;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-agentS3-'));
  const agents: Agent[] = [];

  before(async () => {
    cluster = await EtcdCluster.start({ size: 1, portSeed: 'agentEdges-s3' });
    s3 = await startS3Server(path.join(dir, 's3'), 'agentEdges-s3');
    assert.equal((await etcdctl(cluster.endpoints, 'put', 'a', '1')).code, 0);
  });
  after(async () => {
    for (const a of agents) if (a.proc.exitCode === null) a.proc.kill('SIGKILL');
    await s3?.stop();
    await cluster?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** The test's own SDK client of the S3 server, with the right keys. */
  const sdkClient = () =>
    new S3Client({
      region: 'us-east-1',
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.env.AWS_ACCESS_KEY_ID, secretAccessKey: s3.env.AWS_SECRET_ACCESS_KEY },
    });

  const agentArgs = (prefix: string, spool: string) => [
    '--endpoints',
    cluster.endpoints,
    '--store',
    s3.url(prefix),
    '--s3-endpoint',
    s3.endpoint,
    '--spool-dir',
    path.join(dir, spool),
    '--delta-interval',
    '300ms',
  ];

  test('a wrong secret is refused at start in one line (exit 3); with the right one, the upload a killed agent left is aborted, and only it', async () => {
    const sdk = sdkClient();
    try {
      // Three uploads begun and never finished: an old one in the store's prefix (a killed
      // agent's), a fresh one there (another writer's, maybe still going), an old one elsewhere.
      const begin = async (Key: string) => {
        const u = await sdk.send(new CreateMultipartUploadCommand({ Bucket: s3.bucket, Key }));
        await sdk.send(new UploadPartCommand({ Bucket: s3.bucket, Key, UploadId: u.UploadId, PartNumber: 1, Body: Buffer.alloc(1024, 7) }));
        return u.UploadId!;
      };
      const stale = await begin('edges/0000000000000001/full-00000000000000000002-x.db.gz');
      const fresh = await begin('edges/0000000000000001/full-00000000000000000003-x.db.gz');
      const elsewhere = await begin('other/full-x.db.gz');
      // An hour old, as the server records it (its record of when each upload began).
      const hourAgo = new Date(Date.now() - 3600_000);
      for (const id of [stale, elsewhere]) fs.utimesSync(path.join(dir, 's3', s3.bucket, '._S3rver_uploads', id, 'key'), hourAgo, hourAgo);

      const refused = await run(process.execPath, [BIN, 'backup', 'run', ...agentArgs('edges', 'spool-refused')], {
        env: { ...process.env, ...s3.wrongSecretEnv },
      });
      assert.equal(refused.code, 3, refused.stderr);
      const lines = refused.stderr.trim().split('\n');
      assert.equal(lines.length, 1, refused.stderr);
      assert.match(lines[0], /refused the credentials \(SignatureDoesNotMatch\); check them/);
      assert.doesNotMatch(refused.stdout + refused.stderr, new RegExp(s3.wrongSecretEnv.AWS_SECRET_ACCESS_KEY));
      const listed = async () => ((await sdk.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket }))).Uploads ?? []).map((u) => u.UploadId).sort();
      assert.deepEqual(await listed(), [stale, fresh, elsewhere].sort(), 'the refused agent aborted nothing');

      const agent = startAgent(agentArgs('edges', 'spool-ok'), s3.env);
      agents.push(agent);
      await waitLine(agent, /aborted 1 upload\(s\) a killed agent left half done/);
      await waitLine(agent, /full \(first full\) at revision \d+/);
      assert.deepEqual(await listed(), [fresh, elsewhere].sort());
      await stop(agent);
      assert.equal(agent.proc.exitCode, 0);
    } finally {
      sdk.destroy();
    }
  });

  test('a lock left by a dead agent on another host: refused naming its host and start time (exit 3); --force takes it, and it is released on exit', async () => {
    // The first agent runs as if on another host (its own UTS namespace), then dies with -9.
    const spool = path.join(dir, 'spool-other');
    const proc = spawn(
      'unshare',
      ['--uts', 'sh', '-c', 'hostname backup-host-2 && exec "$0" "$@"', process.execPath, BIN, 'backup', 'run', ...agentArgs('locks', 'spool-other')],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, ...s3.env },
      },
    );
    const other: Agent = { proc, lines: [], exit: new Promise((r) => proc.on('exit', (code) => r(code))) };
    for (const s of [proc.stdout, proc.stderr]) s.on('data', (d: Buffer) => other.lines.push(...d.toString().split('\n')));
    agents.push(other);
    await waitLine(other, /backup agent on backup-host-2 \(pid \d+\)/);
    await waitLine(other, /watching \S+ from revision/);
    proc.kill('SIGKILL');
    await other.exit;
    assert.ok(fs.existsSync(spool));

    const env = { ...process.env, ...s3.env };
    const refused = await run(process.execPath, [BIN, 'backup', 'run', ...agentArgs('locks', 'spool-here')], { env });
    assert.equal(refused.code, 3, refused.stderr);
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
    assert.match(
      refused.stderr,
      /is locked by the agent on backup-host-2 \(pid \d+, started \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\); one agent per store: stop that agent, or give --force if it is gone for good/,
    );

    const forced = startAgent([...agentArgs('locks', 'spool-here'), '--force'], s3.env);
    agents.push(forced);
    await waitLine(forced, /--force: taking the lock from the agent on backup-host-2 \(pid \d+, started /);
    await waitLine(forced, /watching \S+ from revision/);
    const sdk = sdkClient();
    try {
      const { GetObjectCommand } = await import('@aws-sdk/client-s3');
      const lock = JSON.parse(await (await sdk.send(new GetObjectCommand({ Bucket: s3.bucket, Key: 'locks/lock.json' }))).Body!.transformToString()) as {
        host: string;
        pid: number;
      };
      assert.deepEqual([lock.host, lock.pid], [os.hostname(), forced.proc.pid]);
      await stop(forced);
      assert.equal(forced.proc.exitCode, 0);
      await assert.rejects(sdk.send(new GetObjectCommand({ Bucket: s3.bucket, Key: 'locks/lock.json' })), { name: 'NoSuchKey' });
    } finally {
      sdk.destroy();
    }
  });
});
