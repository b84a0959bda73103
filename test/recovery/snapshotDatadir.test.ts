// snapshot save/status/restore and datadir inspect/pack/unpack through the CLI,
// against a real Lifeboat member, including the bad inputs operators meet.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import * as tar from 'tar';
import { LifeboatCluster, etcdctl, lifeboat, parseEtcdJson, waitFor } from '../support/lifeboatCluster.js';

describe('snapshot and data dir commands', () => {
  let c: LifeboatCluster;
  let snap = '';
  before(async () => {
    // A low snapshot count: the 50 puts leave a Raft snapshot file for recover plan's snapshot age.
    c = await LifeboatCluster.start('snapdatadir', 1, ['--snapshot-count', '20']);
    for (let i = 0; i < 50; i++) assert.equal((await etcdctl(c.members[0].client, 'put', `key${i}`, `value${i}`)).code, 0);
    snap = path.join(c.dir, 'backup.db');
  });
  after(async () => c?.stopAll());

  test('snapshot save, then status verifies the checksum and reports revision, keys and members', async () => {
    const save = await lifeboat('snapshot', 'save', snap, '--endpoints', c.members[0].client);
    assert.equal(save.code, 0, save.stderr);
    assert.match(save.stdout, /revision 51, 50 keys/);
    // Each digest says what it is of: save prints the whole file's, status the trailer's (the database's).
    const fileSha = createHash('sha256').update(fs.readFileSync(snap)).digest('hex');
    assert.ok(save.stdout.includes(`file sha256 ${fileSha} (the whole file, trailer included`), save.stdout);
    assert.ok(!fs.existsSync(`${snap}.part`));
    const status = await lifeboat('snapshot', 'status', snap, '-w', 'json');
    assert.equal(status.code, 0, status.stderr);
    const s = JSON.parse(status.stdout);
    assert.equal(s.revision, 51);
    assert.deepEqual(Object.keys(s).slice(0, 4), ['hash', 'revision', 'totalKey', 'totalSize']);
    assert.equal(typeof s.hash, 'number');
    assert.equal(s.totalKey, 50);
    assert.equal(s.totalSize, fs.statSync(snap).size);
    assert.equal(s.members.length, 1);
    assert.equal(s.members[0].name, 'm1');
    const table = await lifeboat('snapshot', 'status', snap, '-w', 'table');
    assert.match(table.stdout, /\|\s+HASH\s+\|\s+REVISION\s+\|\s+TOTAL KEYS\s+\|\s+TOTAL SIZE\s+\|/);
    assert.match(table.stdout, new RegExp(`\\| +${s.hash.toString(16)} \\| +51 \\| +50 \\| +[\\d.]+ [kM]B \\|`));
    // The directory the snapshot sits in, given by mistake: one line naming it, exit 2 (no raw EISDIR).
    const dir = await lifeboat('snapshot', 'status', path.dirname(snap));
    assert.equal(dir.code, 2, dir.stderr);
    assert.equal(dir.stderr.trim().split('\n').length, 1, dir.stderr);
    assert.match(dir.stderr, new RegExp(`${path.dirname(snap)} is a directory, not a snapshot file`));
  });

  test('snapshot save refuses an existing FILE (left byte-identical) unless --force, which replaces it whole', async () => {
    // The only pre-disaster backup, from last year: a copy of the first test's snapshot, dated 2020.
    const file = path.join(c.dir, 'only-backup.db');
    fs.copyFileSync(snap, file);
    const lastYear = new Date('2020-06-01T00:00:00Z');
    fs.utimesSync(file, lastYear, lastYear);
    const old = fs.readFileSync(file);
    const refused = await lifeboat('snapshot', 'save', file, '--endpoints', c.members[0].client);
    assert.equal(refused.code, 3, refused.stderr);
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
    const said = `snapshot file ${file} already exists (a Lifeboat snapshot, ${old.length} bytes, modified 2020-06-01T00:00:00Z); refusing to replace it: pass --force`;
    assert.ok(refused.stderr.includes(said), refused.stderr);
    assert.ok(fs.readFileSync(file).equals(old), 'the existing snapshot changed');
    assert.equal(fs.statSync(file).mtime.getTime(), lastYear.getTime());
    assert.ok(!fs.existsSync(`${file}.part`));
    const forced = await lifeboat('snapshot', 'save', file, '--force', '--endpoints', c.members[0].client);
    assert.equal(forced.code, 0, forced.stderr);
    assert.ok(fs.statSync(file).mtime.getTime() > lastYear.getTime(), '--force did not replace it');
    assert.ok(!fs.existsSync(`${file}.part`));
    const status = await lifeboat('snapshot', 'status', file, '-w', 'json');
    assert.equal(status.code, 0, status.stderr);
    assert.equal(JSON.parse(status.stdout).totalKey, 50);
  });

  test('restore: a new one-member cluster with a new cluster ID, every key, the revision bumped', async () => {
    const target = path.join(c.dir, 'restored');
    const r = await lifeboat(
      'snapshot',
      'restore',
      snap,
      '--data-dir',
      target,
      '--name',
      'r1',
      '--initial-advertise-peer-urls',
      'http://127.0.0.1:1',
      '--bump-revision',
      '1000',
      '--mark-compacted',
      '-w',
      'json',
    );
    assert.equal(r.code, 0, r.stderr);
    const res = JSON.parse(r.stdout);
    assert.equal(res.keys, 50);
    assert.equal(res.revision, 1051);
    assert.notEqual(res.clusterId, res.parentClusterId);
    assert.match(res.serverCommand, /^lifeboat server --name r1 --data-dir /);
    assert.ok(!fs.existsSync(`${target}.part`));
    // Start it and read back.
    const m = c.define('r1');
    m.dataDir = target;
    c.spawn(m, ['--initial-cluster', `r1=${m.peerUrl}`]);
    await waitFor('the restored member to lead', () => c.leader([m]));
    const get = await etcdctl(m.client, 'get', 'key42', '--print-value-only');
    assert.equal(get.stdout.trim(), 'value42');
    const header = parseEtcdJson((await etcdctl(m.client, 'put', 'after', 'restore', '-w', 'json')).stdout).header;
    assert.equal(BigInt(header.cluster_id).toString(16), res.clusterId);
    assert.equal(Number(header.revision), 1052);
    const old = await etcdctl(m.client, 'get', 'key1', '--rev', '10');
    assert.match(old.stderr, /required revision has been compacted/);
    await c.kill(m, 'SIGTERM');
  });

  test('restore refuses bad input and leaves nothing half-written', async () => {
    const occupied = path.join(c.dir, 'occupied');
    fs.mkdirSync(occupied);
    fs.writeFileSync(path.join(occupied, 'keep.txt'), 'mine');
    const common = ['--name', 'x', '--initial-advertise-peer-urls', 'http://127.0.0.1:1'];
    const nonEmpty = await lifeboat('snapshot', 'restore', snap, '--data-dir', occupied, ...common);
    assert.equal(nonEmpty.code, 3);
    assert.match(nonEmpty.stderr, /is not empty/);
    assert.deepEqual(fs.readdirSync(occupied), ['keep.txt']);

    const fresh = path.join(c.dir, 'fresh');
    const half = await lifeboat('snapshot', 'restore', snap, '--data-dir', fresh, ...common, '--bump-revision', '5');
    assert.equal(half.code, 2);
    assert.equal(half.stderr, 'Error: --mark-compacted required if --bump-revision > 0\n', "etcdutl's text, our flag name");
    const otherHalf = await lifeboat('snapshot', 'restore', snap, '--data-dir', fresh, ...common, '--mark-compacted');
    assert.equal(otherHalf.code, 2);
    assert.match(otherHalf.stderr, /--bump-revision > 0 required with --mark-compacted/);

    const missing = await lifeboat('snapshot', 'restore', path.join(c.dir, 'nope.db'), '--data-dir', fresh, ...common);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /does not exist/);
    // A data dir given as the snapshot: one line saying so, exit 2 (was a raw EISDIR, exit 1).
    const dirGiven = await lifeboat('snapshot', 'restore', c.members[0].dataDir, '--data-dir', fresh, ...common);
    assert.equal(dirGiven.code, 2, dirGiven.stderr);
    assert.equal(
      dirGiven.stderr,
      `Error: ${c.members[0].dataDir} is a directory, not a snapshot file; give the file itself (an etcd data dir's is ${path.join(c.members[0].dataDir, 'member', 'snap', 'db')}; for a data dir use 'lifeboat datadir inspect ${c.members[0].dataDir}')\n`,
    );

    const truncated = path.join(c.dir, 'truncated.db');
    fs.writeFileSync(truncated, fs.readFileSync(snap).subarray(0, 5000));
    const t = await lifeboat('snapshot', 'status', truncated);
    assert.equal(t.code, 1);
    assert.match(t.stderr, /truncated|no sha256 trailer/);
    assert.match(t.stderr, /copy it again or save a new one/);
    // restore says truncated too (not "no sha256 trailer; use --skip-hash-check"), with or without the flag.
    for (const skip of [[], ['--skip-hash-check']]) {
      const r = await lifeboat('snapshot', 'restore', truncated, '--data-dir', fresh, ...common, ...skip);
      assert.equal(r.code, 1, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(
          `^Error: snapshot ${truncated} is truncated \\(its header says \\d+ pages of \\d+ bytes \\(\\d+ bytes\\), the file has 5000 bytes\\); copy it again or save a new one\n$`,
        ),
      );
      assert.ok(!fs.existsSync(fresh) && !fs.existsSync(`${fresh}.part`));
    }

    const corrupt = path.join(c.dir, 'corrupt.db');
    const bytes = Buffer.from(fs.readFileSync(snap));
    bytes[4096 + 100] ^= 0xff;
    fs.writeFileSync(corrupt, bytes);
    const bad = await lifeboat('snapshot', 'restore', corrupt, '--data-dir', fresh, ...common);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /sha256/);
    assert.ok(!fs.existsSync(fresh) && !fs.existsSync(`${fresh}.part`), 'a failed restore left files behind');
    assert.equal(bad.stderr.trim().split('\n').length, 1);
  });

  test('datadir inspect: refused while the member runs; complete once it is stopped', async () => {
    const m1 = c.members[0];
    const running = await lifeboat('datadir', 'inspect', m1.dataDir);
    assert.equal(running.code, 3, 'refused by a safety check, as pack is');
    assert.match(running.stderr, /is locked by pid \d+ \(a member is running\); stop it first/);
    assert.equal(await c.kill(m1, 'SIGTERM'), 0);
    const r = await lifeboat('datadir', 'inspect', m1.dataDir, '-w', 'json');
    assert.equal(r.code, 0, r.stderr);
    const rep = JSON.parse(r.stdout);
    assert.equal(rep.keyCount, 50);
    assert.equal(rep.kvRevision, 51);
    assert.equal(rep.voters.length, 1);
    assert.equal(rep.commitIndex, rep.lastIndex);
    assert.equal(rep.uncommitted.count, 0);
    assert.deepEqual(rep.damage, []);
    assert.ok(rep.lastWrite);
  });

  test('datadir pack refuses a running member; pack, unpack and a tampered archive', async () => {
    const m1 = c.members[0];
    c.spawn(m1, []);
    await waitFor('m1 back', () => c.leader([m1]));
    const archive = path.join(c.dir, 'm1.tar.gz');
    const refused = await lifeboat('datadir', 'pack', m1.dataDir, '--out', archive);
    assert.equal(refused.code, 3);
    assert.match(refused.stderr, /locked by pid/);
    assert.ok(!fs.existsSync(archive) && !fs.existsSync(`${archive}.part`));
    assert.equal(await c.kill(m1, 'SIGTERM'), 0);
    const before = JSON.parse((await lifeboat('datadir', 'inspect', m1.dataDir, '-w', 'json')).stdout);
    const packed = await lifeboat('datadir', 'pack', m1.dataDir, '--out', archive);
    assert.equal(packed.code, 0, packed.stderr);
    // Packing again onto the archive is refused (it stays as it was) unless --force.
    const archiveBytes = fs.readFileSync(archive);
    const packAgain = await lifeboat('datadir', 'pack', m1.dataDir, '--out', archive);
    assert.equal(packAgain.code, 3, packAgain.stderr);
    assert.match(packAgain.stderr, new RegExp(`--out ${archive} already exists \\(a gzip archive, \\d+ bytes, .*--force`));
    assert.ok(fs.readFileSync(archive).equals(archiveBytes));
    const forced = await lifeboat('datadir', 'pack', m1.dataDir, '--out', archive, '--force');
    assert.equal(forced.code, 0, forced.stderr);
    assert.ok(!fs.existsSync(`${archive}.part`));
    const moved = path.join(c.dir, 'moved');
    const unpacked = await lifeboat('datadir', 'unpack', archive, '--data-dir', moved);
    assert.equal(unpacked.code, 0, unpacked.stderr);
    const afterMove = JSON.parse((await lifeboat('datadir', 'inspect', moved, '-w', 'json')).stdout);
    assert.equal(afterMove.hash, before.hash);
    assert.equal(afterMove.lastIndex, before.lastIndex);
    assert.equal(afterMove.memberId, before.memberId);

    // Flip one byte inside the compressed stream: unpack must refuse and leave nothing.
    const tampered = path.join(c.dir, 'tampered.tar.gz');
    const buf = Buffer.from(fs.readFileSync(archive));
    buf[Math.floor(buf.length / 2)] ^= 0x01;
    fs.writeFileSync(tampered, buf);
    const target = path.join(c.dir, 'from-tampered');
    const bad = await lifeboat('datadir', 'unpack', tampered, '--data-dir', target);
    assert.equal(bad.code, 1, bad.stderr);
    assert.match(bad.stderr, /; (copy it again .*, or )?pack (it|the data dir) again\n$/, 'says what to try');
    assert.ok(!fs.existsSync(target) && !fs.existsSync(`${target}.part`));
    // Unpacking again into its own completed unpack (a resumed run) succeeds and changes nothing.
    const again = await lifeboat('datadir', 'unpack', archive, '--data-dir', moved);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /already holds exactly this archive's/);
    assert.equal(JSON.parse((await lifeboat('datadir', 'inspect', moved, '-w', 'json')).stdout).hash, before.hash);
    // Any other non-empty dir is refused: one with a stray file, one whose file differs.
    const stray = path.join(c.dir, 'stray');
    fs.mkdirSync(stray);
    fs.writeFileSync(path.join(stray, 'notes.txt'), 'keep me');
    const occupied = await lifeboat('datadir', 'unpack', archive, '--data-dir', stray);
    assert.equal(occupied.code, 3, occupied.stderr);
    assert.equal(fs.readFileSync(path.join(stray, 'notes.txt'), 'utf8'), 'keep me');
    const wal = path.join(moved, 'member', 'wal');
    fs.appendFileSync(path.join(wal, fs.readdirSync(wal).sort()[0]), Buffer.from([0]));
    const changed = await lifeboat('datadir', 'unpack', archive, '--data-dir', moved);
    assert.equal(changed.code, 3, changed.stderr);
    assert.match(changed.stderr, /does not hold exactly what/);
  });

  test('recover plan: snapshot age per source; --from-inspect, --from-snapshot and --discard-uncommitted', async () => {
    const m1 = c.members[0]; // stopped by the tests above
    const snapDir = path.join(m1.dataDir, 'member', 'snap');
    const snaps = fs
      .readdirSync(snapDir)
      .filter((f) => f.endsWith('.snap'))
      .sort();
    assert.ok(snaps.length > 0, 'the member took no Raft snapshot');
    const raftSnapAt = fs.statSync(path.join(snapDir, snaps.at(-1)!)).mtime.toISOString();
    // The snapshot file an hour old, as if taken by last night's backup.
    const hourAgo = new Date(Date.now() - 3600_000);
    fs.utimesSync(snap, hourAgo, hourAgo);
    const inspectFile = path.join(c.dir, 'm1-inspect.json');
    fs.writeFileSync(inspectFile, (await lifeboat('datadir', 'inspect', m1.dataDir, '-w', 'json')).stdout);

    const all = await lifeboat('recover', 'plan', '--from-data-dir', m1.dataDir, '--from-inspect', inspectFile, '--from-snapshot', snap, '-w', 'json');
    assert.equal(all.code, 0, all.stderr);
    const p = JSON.parse(all.stdout);
    assert.deepEqual(
      p.sources.map((s: { kind: string }) => s.kind),
      ['data-dir', 'inspect', 'snapshot'],
    );
    const [dir, insp, file] = p.sources;
    assert.equal(dir.snapshotTakenAt, raftSnapAt);
    assert.ok(dir.snapshotAgeSeconds >= 0 && dir.snapshotAgeSeconds < 3600, String(dir.snapshotAgeSeconds));
    assert.equal(insp.snapshotTakenAt, raftSnapAt, 'the inspect file carries the Raft snapshot time');
    assert.ok(file.snapshotAgeSeconds >= 3600 && file.snapshotAgeSeconds < 3600 + 600, String(file.snapshotAgeSeconds));
    const text = await lifeboat('recover', 'plan', '--from-data-dir', m1.dataDir, '--from-snapshot', snap);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /snapshot age 1h 0m \(taken \d{4}-/);
    assert.match(text.stdout, new RegExp(`snapshot age \\d+[smh].* \\(taken ${raftSnapAt.replace(/[.]/g, '\\.')}\\)`));

    // Only the inspect output of a survivor on another host: it is recommended, with the copy to make first.
    const remote = JSON.parse((await lifeboat('recover', 'plan', '--from-inspect', inspectFile, '-w', 'json')).stdout);
    assert.equal(remote.sources[remote.recommended].kind, 'inspect');
    assert.ok(remote.warnings.some((w: string) => /on another host: copy its data dir here/.test(w)));
    assert.match(remote.command, /--set source=<the copied data dir>/);
    // A file that is not inspect output (here binary): one line naming it, none of its bytes.
    const garbage = path.join(path.dirname(inspectFile), 'garbage.json');
    fs.writeFileSync(garbage, Buffer.from([0x7b, 0x00, 0xff, 0xfe, 0x1b, 0x5b, 0x32, 0x4a, 0x80, 0x81]));
    const bad = await lifeboat('recover', 'plan', '--from-inspect', garbage);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /^Error: no usable source: .*garbage\.json: not JSON: not the output of `lifeboat datadir inspect -w json`\n$/);
    assert.ok(
      [...bad.stderr].every((ch) => ch === '\n' || (ch >= ' ' && ch <= '~')),
      `no bytes of the file in the message: ${JSON.stringify(bad.stderr)}`,
    );

    // Only a snapshot: it is recommended, and what it loses is said.
    const fromSnap = JSON.parse((await lifeboat('recover', 'plan', '--from-snapshot', snap, '-w', 'json')).stdout);
    assert.equal(fromSnap.sources[fromSnap.recommended].kind, 'snapshot');
    assert.ok(fromSnap.loses.some((l: string) => /every write after the snapshot/.test(l)));
    assert.match(fromSnap.command, new RegExp(`--set source=${path.resolve(snap).replace(/[.]/g, '\\.')}`));

    // --discard-uncommitted is carried into the plan and its command.
    const discard = JSON.parse((await lifeboat('recover', 'plan', '--from-data-dir', m1.dataDir, '--discard-uncommitted', '-w', 'json')).stdout);
    assert.equal(discard.discardUncommitted, true);
    assert.match(discard.command, /--set discard-uncommitted=true/);
    const keep = JSON.parse((await lifeboat('recover', 'plan', '--from-data-dir', m1.dataDir, '-w', 'json')).stdout);
    assert.equal(keep.discardUncommitted, false);
    assert.doesNotMatch(keep.command, /discard-uncommitted/);
  });
  test('unpack checks the manifest of a well-formed archive: a changed byte, a missing file, an unlisted file; nothing is written', async () => {
    // Valid gzip and tar every time: only the manifest disagrees with the files.
    const files: Record<string, Buffer> = { 'member/snap/db': Buffer.alloc(8192, 7), 'member/wal/0.wal': Buffer.from('entries') };
    const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    const build = async (name: string, listed: Record<string, Buffer>, present: Record<string, Buffer>) => {
      const src = path.join(c.dir, `${name}-src`);
      for (const [f, b] of Object.entries(present)) {
        fs.mkdirSync(path.dirname(path.join(src, f)), { recursive: true });
        fs.writeFileSync(path.join(src, f), b);
      }
      const manifest = {
        format: 'lifeboat-datadir/1',
        createdAt: new Date().toISOString(),
        files: Object.entries(listed).map(([f, b]) => ({ path: f, size: b.length, sha256: sha(b) })),
      };
      fs.writeFileSync(path.join(src, 'lifeboat-manifest.json'), JSON.stringify(manifest));
      const file = path.join(c.dir, `${name}.tar.gz`);
      await tar.create({ gzip: true, file, cwd: src, portable: true }, ['lifeboat-manifest.json', ...Object.keys(present)]);
      return file;
    };
    const flipped = Buffer.from(files['member/snap/db']);
    flipped[4000] ^= 0x01;
    const cases: Array<[string, string, RegExp]> = [
      [
        'changed',
        await build('changed', files, { ...files, 'member/snap/db': flipped }),
        /member\/snap\/db has sha256 [0-9a-f]{16}…, the manifest says [0-9a-f]{16}…; it is damaged or was altered/,
      ],
      ['missing', await build('missing', files, { 'member/snap/db': files['member/snap/db'] }), /is missing member\/wal\/0\.wal listed in its manifest/],
      [
        'extra',
        await build('extra', files, { ...files, 'member/snap/extra': Buffer.from('x') }),
        /holds member\/snap\/extra, which its manifest does not list/,
      ],
    ];
    const good = await build('good', files, files);
    const results = await Promise.all([
      ...cases.map(([name, file]) => lifeboat('datadir', 'unpack', file, '--data-dir', path.join(c.dir, `into-${name}`))),
      lifeboat('datadir', 'unpack', good, '--data-dir', path.join(c.dir, 'into-good')),
    ]);
    for (const [i, [name, , message]] of cases.entries()) {
      const r = results[i];
      assert.equal(r.code, 1, `${name}: ${r.stderr}`);
      assert.match(r.stderr, message, name);
      assert.equal(r.stderr.trim().split('\n').length, 1);
      const target = path.join(c.dir, `into-${name}`);
      assert.ok(!fs.existsSync(target) && !fs.existsSync(`${target}.part`), `${name}: nothing written`);
    }
    assert.equal(results[3].code, 0, `the same archive with a true manifest unpacks: ${results[3].stderr}`);
    assert.equal(results[3].stderr, '', 'nothing to warn about');
    assert.deepEqual(fs.readFileSync(path.join(c.dir, 'into-good', 'member/snap/db')), files['member/snap/db']);
  });

  test('unpack leaves out what the manifest does not list outside the data files, and names each entry in a warning', async () => {
    const files: Record<string, Buffer> = { 'member/snap/db': Buffer.alloc(4096, 3) };
    const src = path.join(c.dir, 'unlisted-src');
    fs.mkdirSync(path.join(src, 'member', 'snap'), { recursive: true });
    fs.writeFileSync(path.join(src, 'member/snap/db'), files['member/snap/db']);
    fs.writeFileSync(path.join(src, 'NOTES.txt'), 'not data');
    fs.writeFileSync(path.join(src, 'member/lock'), '4121');
    fs.symlinkSync('/etc/passwd', path.join(src, 'member/link'));
    const sha = createHash('sha256').update(files['member/snap/db']).digest('hex');
    fs.writeFileSync(
      path.join(src, 'lifeboat-manifest.json'),
      JSON.stringify({ format: 'lifeboat-datadir/1', createdAt: new Date().toISOString(), files: [{ path: 'member/snap/db', size: 4096, sha256: sha }] }),
    );
    const file = path.join(c.dir, 'unlisted.tar.gz');
    await tar.create({ gzip: true, file, cwd: src, portable: true }, ['lifeboat-manifest.json', 'NOTES.txt', 'member']);
    const target = path.join(c.dir, 'into-unlisted');
    const r = await lifeboat('datadir', 'unpack', file, '--data-dir', target);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stderr,
      `warning: ${file} holds 3 entries its manifest does not list; they were not unpacked: member/link (a SymbolicLink, not a plain file), NOTES.txt (not in the manifest), member/lock (not in the manifest)\n`,
    );
    assert.match(r.stdout, /^Unpacked 1 files \(4096 bytes\)/);
    assert.deepEqual(fs.readdirSync(target), ['member']);
    assert.deepEqual(fs.readdirSync(path.join(target, 'member')), ['snap']);
    const json = JSON.parse((await lifeboat('datadir', 'unpack', file, '--data-dir', path.join(c.dir, 'into-unlisted-json'), '-w', 'json')).stdout);
    assert.deepEqual(
      json.ignored.map((e: { path: string }) => e.path),
      ['member/link', 'NOTES.txt', 'member/lock'],
    );
  });
});
