// `lifeboat backup restore` on a store it cannot restore from as asked: a point
// inside a gap, a missing segment, a flipped byte in a segment, an encrypted
// store without its identity or with a wrong one. Each exits non-zero with one
// line naming the object or the revisions, and leaves no output file; the same
// stores restore the same point when intact (and with the right identity).
// (A REV two clusters share: restore.test.ts.)
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { SegmentManifest } from '../../src/backup/manifest.js';
import { clientFor } from '../../src/client/etcdClient.js';
import { BackupFixture } from '../support/backupFixture.js';
import { LifeboatCluster } from '../support/lifeboatCluster.js';
import { lifeboat } from '../support/tools.js';

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const conn = { dialTimeoutMs: 2000, commandTimeoutMs: 10_000 };

describe('backup restore refuses what it cannot restore, in one line, writing nothing', () => {
  let cluster: LifeboatCluster;
  let dir: string;
  let storeDir: string;
  let encryptedDir: string;
  let identity: string;
  let s2: SegmentManifest;
  /** a revision no object covers: after s2, before the second full */
  let inGap: number;
  let gapEnd: number;
  let encryptedAt: number;
  let outputs = 0;

  before(async () => {
    cluster = await LifeboatCluster.start('backupRestoreRefusals', 1);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-backup-refusals-'));
    storeDir = path.join(dir, 'store');
    encryptedDir = path.join(dir, 'encrypted');
    const age = await import('age-encryption');
    identity = await age.generateX25519Identity();
    const fx = new BackupFixture({ endpoints: cluster.endpoints(), runtime: 'lifeboat', storeDir });
    const enc = new BackupFixture({
      endpoints: cluster.endpoints(),
      runtime: 'lifeboat',
      storeDir: encryptedDir,
      recipients: [await age.identityToRecipient(identity)],
    });
    const c = clientFor(cluster.endpoints(), conn);
    try {
      for (let i = 0; i < 10; i++) await c.put(`/app/a-${i}`, `value ${i}`);
      await fx.full();
      await enc.full();
      await c.put('/app/a-1', 'second');
      await fx.segment();
      await c.put('/app/a-2', 'second');
      await c.deleteRange('/app/a-3');
      s2 = await fx.segment();
      encryptedAt = (await enc.segment()).toRevision;
      // Revisions the store never gets: a hole between s2 and the next full.
      inGap = (await c.put('/app/lost', 'one')).header.revision;
      await c.put('/app/lost', 'two');
      gapEnd = (await fx.full()).revision;
    } finally {
      c.close();
      fx.close();
      enc.close();
    }
  });

  after(async () => {
    await cluster?.stopAll();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** `backup restore` into a fresh output path: its result and whether anything was left there. */
  async function restore(store: string, at: string, ...args: string[]) {
    const out = path.join(dir, `out-${++outputs}.db`);
    const r = await lifeboat('backup', 'restore', `file://${store}`, '--at', at, '--output', out, ...args);
    const left = fs.readdirSync(dir).filter((f) => f.startsWith(path.basename(out)));
    return { ...r, left, out };
  }

  /** Exit `code`, one line (the last of stderr: the plan lines come before it) matching `why`, nothing written. */
  function refused(r: Awaited<ReturnType<typeof restore>>, code: number, why: RegExp): void {
    assert.equal(r.code, code, r.stderr);
    const lines = r.stderr.trim().split('\n');
    const last = lines[lines.length - 1];
    assert.match(last, why);
    assert.ok(!lines.slice(0, -1).some((l) => why.test(l)), `the refusal is one line: ${r.stderr}`);
    assert.deepEqual(r.left, [], 'nothing written');
  }

  test('the intact store restores the last revision of the segment that later goes missing or damaged', async () => {
    const r = await restore(storeDir, String(s2.toRevision));
    assert.equal(r.code, 0, r.stderr);
    assert.ok(fs.existsSync(r.out));
  });

  test('a point inside a gap: refused, naming the gap and the nearest restorable revisions', async () => {
    const r = await restore(storeDir, String(inGap));
    refused(
      r,
      3,
      new RegExp(
        `revision ${inGap} of cluster [0-9a-f]{16} cannot be restored: it is inside a gap \\(${inGap}\\.\\.${gapEnd - 1}\\); the nearest restorable revisions are ${inGap - 1} before it and ${gapEnd} after it`,
      ),
    );
  });

  test('a missing segment: refused, naming the object', async () => {
    const missing = path.join(dir, 'missing');
    fs.cpSync(storeDir, missing, { recursive: true });
    fs.rmSync(path.join(missing, s2.object));
    const r = await restore(missing, String(s2.toRevision));
    refused(
      r,
      3,
      new RegExp(
        `inside a gap \\(${s2.fromRevision}\\.\\.${gapEnd - 1}\\) where ${escape(s2.object)}\\.manifest\\.json: its object ${escape(s2.object)} is not in the store`,
      ),
    );
  });

  test('a flipped byte in a segment: fails, naming the object', async () => {
    const flipped = path.join(dir, 'flipped');
    fs.cpSync(storeDir, flipped, { recursive: true });
    const f = path.join(flipped, s2.object);
    const bytes = fs.readFileSync(f);
    bytes[bytes.length >> 1] ^= 0x01;
    fs.writeFileSync(f, bytes);
    const r = await restore(flipped, String(s2.toRevision));
    refused(r, 1, new RegExp(`${escape(s2.object)}.*sha256`));
  });

  test('an encrypted store: without the identity and with a wrong one refused naming the object; with it restored; the identity never shown', async () => {
    const age = await import('age-encryption');
    const right = path.join(dir, 'right.txt');
    const wrong = path.join(dir, 'wrong.txt');
    fs.writeFileSync(right, `${identity}\n`, { mode: 0o600 });
    const other = await age.generateX25519Identity();
    fs.writeFileSync(wrong, `${other}\n`, { mode: 0o600 });
    const at = String(encryptedAt);
    refused(await restore(encryptedDir, at), 1, /full-\d{20}-\S+\.db\.gz\.age: encrypted to age1\w+; give the age identity \(--identity-file\)/);
    const w = await restore(encryptedDir, at, '--identity-file', wrong);
    refused(w, 1, /full-\d{20}-\S+\.db\.gz\.age: cannot decode: no identity matched/);
    const ok = await restore(encryptedDir, at, '--identity-file', right);
    assert.equal(ok.code, 0, ok.stderr);
    for (const text of [w.stdout, w.stderr, ok.stdout, ok.stderr]) {
      assert.ok(!text.includes(identity.slice(16)) && !text.includes(other.slice(16)), 'an identity was shown');
    }
  });
});
