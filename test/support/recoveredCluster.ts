// What the kubeadm and Debian etcd.service recovery tests check of a cluster
// before and after its recovery, through etcdctl (`ctl` runs it against one
// member with the test's TLS flags): its cluster ID, its revision, its voters,
// the keys each member holds, and the old data dirs fenced.
import assert from 'node:assert/strict';
import path from 'node:path';
import { ROOT, run, waitFor, type RunResult } from './tools.js';

export type Ctl = (...args: string[]) => Promise<RunResult>;

export async function clusterIdVia(ctl: Ctl): Promise<string> {
  return String((JSON.parse((await ctl('member', 'list', '-w', 'json')).stdout) as { header: { cluster_id: unknown } }).header.cluster_id);
}

export async function revisionVia(ctl: Ctl): Promise<number> {
  return Number(
    (JSON.parse((await ctl('endpoint', 'status', '-w', 'json')).stdout) as Array<{ Status: { header: { revision: number } } }>)[0].Status.header.revision,
  );
}

/** The members are exactly `names`, none a learner. */
export async function assertVoters(ctl: Ctl, names: string[]): Promise<void> {
  const list = JSON.parse((await ctl('member', 'list', '-w', 'json')).stdout) as { members: Array<{ name: string; isLearner?: boolean }> };
  assert.deepEqual(list.members.map((m) => m.name).sort(), names);
  assert.ok(list.members.every((m) => !m.isLearner));
}

/** Waits until each member (its own `ctl`) holds `keys` keys under `prefix` (serializable reads: each member's own). */
export async function waitEveryKey(members: Array<{ name: string; ctl: Ctl }>, prefix: string, keys: number): Promise<void> {
  const count = async (ctl: Ctl) => (await ctl('get', prefix, '--prefix', '--keys-only', '--consistency=s')).stdout.split('\n').filter(Boolean).length;
  for (const m of members) await waitFor(`${m.name} to hold every key`, async () => (await count(m.ctl)) === keys, { timeoutMs: 10_000 });
}

/** `datadir inspect` says each member's old data dir is fenced. */
export async function assertFenced(members: Array<{ name: string; dataDir: string }>): Promise<void> {
  for (const m of members) {
    const inspect = await run(process.execPath, [path.join(ROOT, 'bin', 'run.js'), 'datadir', 'inspect', m.dataDir]);
    assert.match(`${inspect.stdout}${inspect.stderr}`, /fenced/, `${m.name}: ${inspect.stdout}${inspect.stderr}`);
  }
}
