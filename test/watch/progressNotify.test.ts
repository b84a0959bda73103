// `lifeboat server --experimental-watch-progress-notify-interval` (etcd's flag): an
// idle watch that asked for progress notifications hears the store's revision that often.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { LifeboatCluster, etcdctl, parseEtcdJson, waitFor } from '../support/lifeboatCluster.js';
import { RawWatch } from './watchClients.js';

test('--experimental-watch-progress-notify-interval 300ms: an idle progress-notify watch hears the revision within seconds; one without progress_notify hears nothing', async () => {
  const c = await LifeboatCluster.start('progress-notify', 1, ['--experimental-watch-progress-notify-interval', '300ms']);
  const watches: RawWatch[] = [];
  after(async () => {
    for (const w of watches) w.close();
    await c.stopAll();
  });
  const m = c.members[0];
  const put = parseEtcdJson((await etcdctl(m.client, 'put', 'other', 'v', '-w', 'json')).stdout);
  const revision = String(put.header.revision);

  const [notified, quiet] = [new RawWatch(m.client), new RawWatch(m.client)];
  watches.push(notified, quiet);
  notified.create({ key: 'k', progress_notify: true });
  quiet.create({ key: 'k' });
  await Promise.all([notified.waitCreated(), quiet.waitCreated()]);
  const progress = (w: RawWatch) => w.responses.filter((r) => !r.created && !r.canceled && (r.events ?? []).length === 0);
  const first = await waitFor('a progress notification', () => progress(notified)[0], 5000, 50);
  assert.equal(first.header.revision, revision);
  assert.deepEqual(progress(quiet), []);
});
