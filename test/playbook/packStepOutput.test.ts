// A playbook's pack-data-dir step never writes its archive over a file the run did
// not write (exit 3, the file unchanged); a fresh path is packed; and an archive an
// earlier attempt of the same run wrote (killed before its record) is packed again
// on resume.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LifeboatCluster, etcdctl, run, BIN, binFor } from '../support/lifeboatCluster.js';

const PLAYBOOK = `name: pack-only
description: Pack a stopped member's data dir.
variables:
  data-dir:
    type: path
    prompt: "The data dir"
  archive:
    type: path
    prompt: "Where to write the archive"
steps:
  - id: pack
    type: pack-data-dir
    with:
      data-dir: \${vars.data-dir}
      out: \${vars.archive}
`;

describe('pack-data-dir in a playbook: an existing archive path', () => {
  let c: LifeboatCluster;
  let file = '';
  let auditDb = '';
  before(async () => {
    c = await LifeboatCluster.start('packstep', 1);
    assert.equal((await etcdctl(c.endpoints(), 'put', 'k', 'v')).code, 0);
    assert.equal(await c.kill(c.members[0], 'SIGTERM'), 0);
    file = path.join(c.dir, 'pack-only.yaml');
    fs.writeFileSync(file, PLAYBOOK);
    auditDb = path.join(c.dir, 'audit.db');
  });
  after(async () => c?.stopAll());

  const pack = (archive: string, env: NodeJS.ProcessEnv = {}, bin = binFor(env)) =>
    run(
      process.execPath,
      [
        bin,
        'playbook',
        'run',
        file,
        '--yes',
        '--reason',
        'test',
        '--audit-db',
        auditDb,
        '--set',
        `data-dir=${c.members[0].dataDir}`,
        '--set',
        `archive=${archive}`,
      ],
      { env: { ...process.env, ...env }, timeoutMs: 60_000 },
    );

  test('a file the run did not write is refused and kept; a fresh path is packed', async () => {
    const precious = path.join(c.dir, 'precious.tar.gz');
    fs.writeFileSync(precious, 'the only copy\n');
    const refused = await pack(precious);
    assert.equal(refused.code, 3, `${refused.stdout}\n${refused.stderr}`);
    assert.match(refused.stdout + refused.stderr, new RegExp(`archive ${precious} already exists \\(14 bytes, modified [^)]+\\), not written by this run`));
    assert.equal(fs.readFileSync(precious, 'utf8'), 'the only copy\n');

    const fresh = path.join(c.dir, 'fresh.tar.gz');
    const ok = await pack(fresh);
    assert.equal(ok.code, 0, `${ok.stdout}\n${ok.stderr}`);
    assert.ok(fs.statSync(fresh).size > 0);
  });

  test("killed after packing, before the step's record: the resume packs again over its own archive", async () => {
    const archive = path.join(c.dir, 'mine.tar.gz');
    const killed = await pack(archive, { LIFEBOAT_FAULT: 'after-step:pack' });
    assert.notEqual(killed.code, 0, 'the fault hook did not stop the run');
    assert.ok(fs.existsSync(archive));
    const runId = /\br-\d{8}-\d{6}-[0-9a-f]+\b/.exec(killed.stdout + killed.stderr)?.[0];
    assert.ok(runId, killed.stdout);
    const resumed = await run(process.execPath, [BIN, 'playbook', 'resume', runId, '--yes', '--audit-db', auditDb], { timeoutMs: 60_000 });
    assert.equal(resumed.code, 0, `${resumed.stdout}\n${resumed.stderr}`);
  });

  test('a released lifeboat (bin/run.js) has no fault hook: the same run with LIFEBOAT_FAULT=after-step:pack finishes', async () => {
    const archive = path.join(c.dir, 'release.tar.gz');
    const done = await pack(archive, { LIFEBOAT_FAULT: 'after-step:pack' }, BIN);
    assert.equal(done.code, 0, `${done.stdout}\n${done.stderr}`);
    assert.ok(fs.statSync(archive).size > 0);
  });
});
