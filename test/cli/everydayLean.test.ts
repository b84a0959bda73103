// The everyday commands bin/run.js runs without oclif (src/cli/everydayRun.ts):
// each says byte for byte what oclif's path says (output, errors, exit code), and
// loads nothing it does not use.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EtcdCluster } from '../support/etcdCluster.js';
import { BIN, ROOT } from '../support/lifeboatCluster.js';
import { freePorts } from '../support/ports.js';

const OCLIF = path.join(ROOT, 'dist', 'test', 'support', 'oclifRun.js');

function spawn(script: string, args: readonly string[], o: { input?: string; env?: Record<string, string> } = {}) {
  const r = spawnSync(process.execPath, [script, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    input: o.input ?? '',
    env: { ...process.env, NO_COLOR: '1', LIFEBOAT_DEBUG: '', NODE_DEBUG: '', ...o.env },
    timeout: 30_000,
  });
  assert.equal(r.error, undefined, `spawn failed: ${r.error}`);
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The lean entry's and oclif's answers to `args` (stdin `input`), `normalize`d (a health check's time). */
function assertSame(args: readonly string[], o: { input?: string; normalize?: (s: string) => string } = {}) {
  const n = o.normalize ?? ((s: string) => s);
  const lean = spawn(BIN, args, o);
  const oclif = spawn(OCLIF, args, o);
  const said = (r: typeof lean) => ({ code: r.code, stdout: n(r.stdout), stderr: n(r.stderr) });
  assert.deepEqual(said(lean), said(oclif), `lifeboat ${args.join(' ')}`);
  return lean;
}

const took = (s: string) => s.replace(/took = [\d.]+m?s/g, 'took = T').replace(/"took":"[^"]*"/g, '"took":"T"');

describe('the everyday commands without oclif', () => {
  let etcd: EtcdCluster;
  let dir: string;
  let endpoint: string[];
  let closed: string;
  before(async () => {
    etcd = await EtcdCluster.start({ size: 1, portSeed: 'everydayLean' });
    endpoint = ['--endpoints', etcd.endpoints];
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-everyday-'));
    // A port nothing listens on: the unreachable endpoint's errors.
    closed = `127.0.0.1:${(await freePorts(1, 'everydayLean-closed'))[0]}`;
  });
  after(async () => {
    await etcd?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('version, get and put say what oclif says: output, errors, exit codes, --help', () => {
    const ok = assertSame(['version']);
    assert.match(ok.stdout, /^lifeboat\/\d+\.\d+\.\d+ node-v/);
    assertSame(['version', '-w', 'json']);
    assertSame(['version', '--help']);
    assertSame(['version', '--bogus']);
    assertSame(['version', 'extra']);
    assertSame(['version', 'extra', '-w', 'json']);
    assertSame(['version', '-w', 'json', 'extra']);

    assert.equal(assertSame(['put', '/every/a', 'one', ...endpoint]).stdout, 'OK\n');
    assertSame(['put', '/every/b', ...endpoint], { input: 'two' });
    assertSame(['put', '/every/a', 'one', '--prev-kv', ...endpoint]);
    assertSame(['put', '', 'v', ...endpoint]);
    assertSame(['put', '/every/a', 'v', '--lease', 'zz', ...endpoint]);
    assertSame(['put', '--help']);
    assertSame(['put', ...endpoint]);

    assert.equal(assertSame(['get', '/every/a', ...endpoint]).stdout, '/every/a\none\n');
    assertSame(['get', '/every/', '--prefix', '-w', 'json', '--consistency', 's', ...endpoint]);
    assertSame(['get', '/every/a', '/every/z', '--sort-by', 'VALUE', '--order', 'DESCEND', '-w', 'table', ...endpoint]);
    assertSame(['get', '/every/', '--prefix', '--count-only', '--keys-only=true', ...endpoint]);
    assertSame(['get', '--help']);
    assertSame(['get', ...endpoint]);
    assertSame(['get', '/k', '--consistency', 'x', ...endpoint]);
    assertSame(['get', '/k', '--rev', 'abc', ...endpoint]);
    assertSame(['get', '/k', '-w']);
    assertSame(['get', '/k', '--pass=S3CRET']);
    assertSame(['get', '/k', 'end', 'extra']);
    assertSame(['get', '/k', '--endpoints', closed, '--dial-timeout', '300ms']);
  });

  test('endpoint health and status, member list and snapshot status say what oclif says', () => {
    assert.equal(assertSame(['endpoint', 'health', ...endpoint], { normalize: took }).code, 0);
    assertSame(['endpoint', 'health', '-w', 'json', '--cluster', ...endpoint], { normalize: took });
    assert.equal(assertSame(['endpoint', 'health', '--endpoints', `${etcd.endpoints},${closed}`, '--dial-timeout', '300ms'], { normalize: took }).code, 1);
    assertSame(['endpoint', 'health', '--help']);
    assertSame(['endpoint', 'health', '--clusterr']);

    assertSame(['endpoint', 'status', '-w', 'table', ...endpoint]);
    assertSame(['endpoint', 'status', '-w', 'json', '--cluster', ...endpoint]);
    assert.equal(assertSame(['endpoint', 'status', '--endpoints', closed, '--dial-timeout', '300ms']).code, 1);
    assertSame(['endpoint', 'status', '--help']);
    assertSame(['endpoint', 'status', '-w', 'xml']);

    assertSame(['member', 'list', ...endpoint]);
    assertSame(['member', 'list', '-w', 'json', ...endpoint]);
    assertSame(['member', 'list', '--help']);
    assertSame(['member', 'list', 'extra']);

    const file = path.join(dir, 'snap.db');
    execFileSync('etcdctl', ['snapshot', 'save', file, '--endpoints', etcd.endpoints], { stdio: 'ignore' });
    assert.equal(assertSame(['snapshot', 'status', file, '-w', 'table']).code, 0);
    assertSame(['snapshot', 'status', file, '-w', 'json']);
    assertSame(['snapshot', 'status', path.join(dir, 'missing.db')]);
    assertSame(['snapshot', 'status']);
    assertSame(['snapshot', 'status', '--help']);
  });

  test('each loads neither oclif nor an ES module, nor the backup commands S3 SDK and age', () => {
    const file = path.join(dir, 'loads.db');
    execFileSync('etcdctl', ['snapshot', 'save', file, '--endpoints', etcd.endpoints], { stdio: 'ignore' });
    const commands = [['version'], ['get', '/every/a', ...endpoint], ['put', '/every/c', 'v', ...endpoint], ['endpoint', 'health', ...endpoint]];
    commands.push(['endpoint', 'status', ...endpoint], ['member', 'list', ...endpoint], ['snapshot', 'status', file]);
    for (const args of commands) {
      // NODE_DEBUG says each CommonJS module loaded (MODULE) and each ES module (ESM).
      const r = spawn(BIN, args, { env: { NODE_DEBUG: 'module,esm' } });
      assert.equal(r.code, 0, `lifeboat ${args.join(' ')}: ${r.stderr.slice(-500)}`);
      const loaded = r.stderr.split('\n').filter((l) => /^(MODULE|ESM) \d+:/.test(l));
      assert.ok(
        loaded.some((l) => l.includes('everyday.cjs')),
        `lifeboat ${args[0]} ran from dist/everyday.cjs`,
      );
      const unwanted = loaded.filter((l) => /@aws-sdk|age-encryption|oclif|^ESM/.test(l));
      assert.deepEqual(unwanted.slice(0, 5), [], `lifeboat ${args.join(' ')} loaded what it does not use`);
    }
  });
});
