// A member restored with `snapshot restore --bump-revision N --mark-compacted`:
// a client that resumes its watch from a revision it saw before the disaster has
// the watch cancelled as compacted (so it relists) instead of silently missing
// whatever happened between the snapshot and the restore; a watch from the new
// revision works as usual.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { etcdctl, LifeboatCluster, lifeboat, parseEtcdJson, waitFor } from '../support/lifeboatCluster.js';
import { RawKv, RawWatch } from './watchClients.js';

describe('watching a restored member', () => {
  let c: LifeboatCluster | undefined;
  after(async () => c?.stopAll());

  test('a watch resuming from an old revision is cancelled as compacted; a new one works', async () => {
    c = await LifeboatCluster.start('restorewatch', 1);
    const old = c.members[0];
    for (let i = 1; i <= 5; i++) assert.equal((await etcdctl(old.client, 'put', 'k', `v${i}`)).code, 0);
    const oldRev = Number(parseEtcdJson((await etcdctl(old.client, 'get', 'k', '-w', 'json')).stdout).header.revision);
    const file = path.join(c.dir, 'backup.db');
    const saved = await etcdctl(old.client, 'snapshot', 'save', file);
    assert.equal(saved.code, 0, saved.stderr);
    await c.kill(old);

    const restored = c.define('r1');
    const r = await lifeboat(
      'snapshot',
      'restore',
      file,
      '--data-dir',
      restored.dataDir,
      '--name',
      'r1',
      '--initial-advertise-peer-urls',
      restored.peerUrl,
      '--bump-revision',
      '1000',
      '--mark-compacted',
    );
    assert.equal(r.code, 0, r.stderr);
    c.spawn(restored, ['--initial-cluster', `r1=${restored.peerUrl}`]);
    await c.waitForLeader([restored]);
    const newRev = Number(parseEtcdJson((await etcdctl(restored.client, 'get', 'k', '-w', 'json')).stdout).header.revision);
    assert.equal(newRev, oldRev + 1000);

    // etcdctl resuming from an old revision: told, and it exits.
    const w = await etcdctl(restored.client, 'watch', 'k', '--rev', String(oldRev - 2));
    assert.notEqual(w.code, 0);
    assert.match(w.stderr, /watch was canceled \(etcdserver: mvcc: required revision has been compacted\)/);

    // A raw client resuming right after the last revision it saw: created, then cancelled with compact_revision.
    const raw = new RawWatch(restored.client);
    const kv = new RawKv(restored.client);
    try {
      raw.create({ key: 'k', start_revision: oldRev + 1 });
      const cancel = await waitFor('the cancellation', () => raw.responses.find((x) => x.canceled));
      assert.equal(raw.responses[0].created, true);
      assert.equal(Number(cancel.compact_revision), newRev);
      // The relist-and-watch a client does next works.
      raw.create({ key: 'k', start_revision: newRev + 1 });
      await waitFor('the second watch', () => raw.responses.filter((x) => x.created).length === 2);
      await kv.put('k', 'after');
      await waitFor('the event after the restore', () => raw.events().some((e) => e.value === 'after' && e.mod === newRev + 1));
    } finally {
      raw.close();
      kv.close();
      fs.rmSync(file, { force: true });
    }
  });
});
