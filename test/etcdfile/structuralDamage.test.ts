// Structural damage in raw member/snap/db files (no sha256 trailer to catch it;
// bbolt checksums only its meta pages): a page id out of range, a wrong page type,
// a branch pointing back to its parent, and a seeded fuzz run of byte flips. Every
// case must end in a clear one-line error naming the page and offset, or in a
// consistent read: never a crash, never a hang.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { scanEtcdDb } from '../../src/etcdfile/index.js';
import type { EtcdCluster } from '../support/etcdCluster.js';
import { lifeboat } from '../support/tools.js';
import { childBranchOfKeyRoot, layoutOf, type Layout } from './boltLayout.js';
import { fillEtcd, rng, startEtcd } from './etcdSource.js';
import type { FuzzCase, FuzzOutcome } from './fuzzWorker.js';

/** LIFEBOAT_FUZZ_CASES raises it for a longer soak. */
const FUZZ_CASES = Number(process.env.LIFEBOAT_FUZZ_CASES ?? 300);
const CASE_TIME_LIMIT_MS = 5_000;

describe('raw etcd db files with structural damage', { timeout: 100_000 }, () => {
  let etcd: EtcdCluster | undefined;
  let dir = '';
  let raw = '';
  let layout: Layout;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-etcddamage-'));
    etcd = await startEtcd('etcdfile-damage');
    await fillEtcd(etcd.endpoints, { keys: 1500, rounds: 2, seed: 11, compactAfter: 0, leases: 1, keysPerLease: 10, bigValues: [9000] });
    const m = etcd.members[0];
    await etcd.stopMember(m);
    raw = path.join(dir, 'db');
    fs.copyFileSync(path.join(m.dataDir, 'member', 'snap', 'db'), raw);
    layout = layoutOf(raw);
  });

  after(async () => {
    await etcd?.stop();
    if (dir && !process.env.LIFEBOAT_KEEP_TEST_DIRS) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('the file has the structures the damage aims at', () => {
    assert.ok(layout.keyDepth >= 3, `key bucket depth ${layout.keyDepth}`);
    assert.ok(layout.inlineBuckets.includes('cluster'), `inline buckets: ${layout.inlineBuckets.join(',')}`);
    assert.ok(layout.overflowPages.length > 0, 'no overflow page');
    const s = scanEtcdDb(raw);
    assert.ok(s.liveKeys! > 1000);
  });

  /** Writes `raw` with `edit` applied, runs status and restore on it, and returns status's error line. */
  async function damaged(name: string, edit: (b: Buffer) => void): Promise<string> {
    const file = path.join(dir, name);
    const b = Buffer.from(fs.readFileSync(raw));
    edit(b);
    fs.writeFileSync(file, b);
    const status = await lifeboat('snapshot', 'status', file);
    assert.equal(status.code, 1, status.stdout);
    assert.equal(status.stderr.trim().split('\n').length, 1, status.stderr);
    const target = path.join(dir, `${name}-restored`);
    const restore = await lifeboat(
      'snapshot',
      'restore',
      file,
      '--skip-hash-check',
      '--data-dir',
      target,
      '--name',
      'x',
      '--initial-advertise-peer-urls',
      'http://127.0.0.1:1',
    );
    assert.equal(restore.code, 1, restore.stdout);
    assert.equal(restore.stderr, status.stderr);
    assert.ok(!fs.existsSync(target) && !fs.existsSync(`${target}.part`), 'a failed restore left files behind');
    return status.stderr.trim();
  }

  test('a branch element pointing past the last page', async () => {
    const root = layout.keyRoot;
    const at = root.fileOffset + 16 + 16 + 8; // element 1's pgid
    const msg = await damaged('out-of-range', (b) => b.writeBigUInt64LE(0xfff_ffffn, at));
    assert.match(
      msg,
      new RegExp(
        `branch page ${root.id} element 1 points to page 268435455, outside the file's ${layout.pgid} pages \\(page ${root.id}, byte offset ${root.fileOffset + 32}\\)`,
      ),
    );
  });

  test('a wrong page type below a branch', async () => {
    const child = childBranchOfKeyRoot(raw, layout);
    const msg = await damaged('wrong-type', (b) => b.writeUInt16LE(0x10, child.fileOffset + 8));
    assert.match(
      msg,
      new RegExp(
        `branch page ${layout.keyRoot.id} element 0 points to a page of type freelist, want branch or leaf \\(page ${child.id}, byte offset ${child.fileOffset + 8}\\)`,
      ),
    );
  });

  test('a branch that points back to its parent (a cycle)', async () => {
    const child = childBranchOfKeyRoot(raw, layout);
    const at = child.fileOffset + 16 + 8; // child's element 0's pgid
    const msg = await damaged('cycle', (b) => b.writeBigUInt64LE(BigInt(layout.keyRoot.id), at));
    assert.match(
      msg,
      new RegExp(
        `cycle: branch page ${child.id} element 0 points back to page ${layout.keyRoot.id}, already on the path from the bucket's root \\(page ${child.id}, byte offset ${child.fileOffset + 16}\\)`,
      ),
    );
  });

  test(`fuzz: ${FUZZ_CASES} seeded byte flips each end in a clear error or a consistent read, within ${CASE_TIME_LIMIT_MS} ms`, async () => {
    const rand = rng(20241122);
    const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
    const used = layout.reachable.filter((id) => id > 1);
    const cases: FuzzCase[] = Array.from({ length: FUZZ_CASES }, (_, i) => {
      const r = rand();
      let offset: number;
      if (r < 0.15)
        offset = pick([0, 1]) * layout.pageSize + Math.floor(rand() * 80); // meta pages
      else if (r < 0.65)
        offset = pick(used) * layout.pageSize + Math.floor(rand() * 160); // headers and elements
      else offset = pick(used) * layout.pageSize + Math.floor(rand() * layout.pageSize); // anywhere in a page in use
      return { offset, xor: 1 + Math.floor(rand() * 255), importToo: i % 10 === 0 };
    });
    const fuzzDir = fs.mkdtempSync(path.join(dir, 'fuzz-'));
    const outcomes = await runFuzz(raw, cases, fuzzDir);
    const file = path.join(fuzzDir, 'fuzz.db');
    const errors = outcomes.filter((o) => !o.ok);
    if (process.env.LIFEBOAT_FUZZ_DUMP) for (const o of outcomes) console.log(JSON.stringify({ ...o, ...cases[o.index] }));
    for (const o of errors) {
      const c = cases[o.index];
      const where = `case ${o.index} (offset ${c.offset} ^ 0x${c.xor.toString(16)})`;
      assert.ok(o.errorName === 'BoltFormatError' || o.errorName === 'EtcdDataError', `${where}: ${o.errorName}: ${o.message}`);
      assert.ok(!o.message!.includes('\n'), `${where}: a multi-line message`);
      assert.ok(o.message!.startsWith(`etcd db ${file}: `), `${where}: ${o.message}`);
      assert.match(o.message!, /\(page \d+, byte offset \d+\)/, `${where}: no page and offset named`);
    }
    for (const o of outcomes.filter((x) => x.ok)) {
      assert.equal(o.totalKey, o.bucketEntries);
      assert.ok(o.liveKeys! <= o.revisions!);
    }
    // Both kinds of ending happen: the flips reach the structures.
    assert.ok(errors.length > FUZZ_CASES / 10, `only ${errors.length} errors`);
    assert.ok(outcomes.length - errors.length > FUZZ_CASES / 10, `only ${outcomes.length - errors.length} clean reads`);
  });
});

/** Runs the cases in a worker; fails if any one takes longer than CASE_TIME_LIMIT_MS. */
function runFuzz(base: string, cases: FuzzCase[], dir: string): Promise<FuzzOutcome[]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./fuzzWorker.js', import.meta.url), { workerData: { base, cases, dir } });
    const outcomes: FuzzOutcome[] = [];
    let current = -1;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        void worker.terminate();
        const c = cases[current];
        reject(new Error(`fuzz case ${current} (offset ${c?.offset} ^ 0x${c?.xor.toString(16)}) did not finish within ${CASE_TIME_LIMIT_MS} ms: a hang`));
      }, CASE_TIME_LIMIT_MS);
    };
    worker.on('message', (m: { started: number } | FuzzOutcome) => {
      if ('started' in m) {
        current = m.started;
        arm();
        return;
      }
      outcomes.push(m);
      if (outcomes.length === cases.length) {
        clearTimeout(timer);
        void worker.terminate().then(() => resolve(outcomes));
      }
    });
    worker.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`the fuzz worker crashed at case ${current}: ${err.message}`));
    });
    worker.on('exit', (code) => {
      if (outcomes.length < cases.length) {
        clearTimeout(timer);
        reject(new Error(`the fuzz worker exited (${code}) at case ${current}`));
      }
    });
  });
}
