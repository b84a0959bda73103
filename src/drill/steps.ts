// A drill's phases as steps: each a StepDefinition whose parameters are recorded
// as the step's inputs and whose return is recorded as its outputs, run through
// the playbook engine's RunRecorder as a playbook's steps are (drill.ts decides
// which run, and in what order). What a phase finds that a later one needs (the
// snapshot's status, the scratch cluster) and the checks the verdict is made of
// are kept in the drill's DrillState.
//
// Every step reads the source only (status, members, alarms, the snapshot
// stream, counts and HashKV at a revision); every change is to the scratch
// cluster.
import fs from 'node:fs';
import path from 'node:path';
import type { DrillCheck } from '../audit/drillRuns.js';
import { clientFor, type ConnectionOptions } from '../client/etcdClient.js';
import { saveSnapshot } from '../client/snapshotSave.js';
import { resolveTarget } from '../client/target.js';
import type { RuntimeName } from '../common/memberCommand.js';
import { checkCluster } from '../ops/memberOps.js';
import type { ParamSpec, StepContext, StepDefinition } from '../playbook/stepTypes.js';
import { restoreEtcdSnapshotFile } from '../recovery/etcdRestore.js';
import { restoreSnapshot } from '../recovery/restore.js';
import { snapshotStatus, type SnapshotStatus } from '../recovery/snapshotFormat.js';
import { checkData, readSourceAt, type DataCheck, type SourceAtRevision } from './dataCheck.js';
import type { ScratchCluster } from './scratchCluster.js';
import { AUTH_HINTS, explainAuth, sourceState, type SourceState } from './sourceState.js';

/** What the drill's steps share: its settings, what earlier steps found, and the checks so far. */
export interface DrillState {
  readonly runId: string;
  /** the source's connection (the run's, its password a secret of the run) */
  readonly conn: ConnectionOptions;
  /** the scratch cluster's: loopback, no TLS, the same user (it keeps the snapshot's auth) */
  readonly scratchConn: ConnectionOptions;
  readonly etcdBin?: string;
  readonly sampleSize: number;
  /** whether the snapshot was given (--from-snapshot) rather than taken */
  readonly given: boolean;
  /** the scratch dir, and whether the drill made it (then it removes it, else only what it put there) */
  readonly dir: string;
  readonly madeDir: boolean;
  readonly warnings: string[];
  readonly checks: DrillCheck[];
  /** records a check (the verdict is made of them) and says it */
  check(name: string, ok: boolean, detail: string): void;
  before: SourceState | null;
  status: SnapshotStatus | null;
  sourceAt: SourceAtRevision | null;
  runtime: RuntimeName;
  scratch: ScratchCluster | undefined;
  restored: { clusterId: string; memberId: string; token?: string; revision: number; keys: number } | null;
  data: DataCheck | null;
}

/** A check failed and was recorded (as a check, and as its step's error): the drill says it no more. */
export class CheckFailed extends Error {
  // A brand: without a member of its own the class is Error to TypeScript, which
  // (depending on the order it checks files in) narrows `!(e instanceof CheckFailed)` to never.
  declare private readonly checkFailed: true;
}

/** A drill step: a step type with a title made of its parameters. */
export interface DrillStep extends StepDefinition {
  title(p: Record<string, unknown>): string;
}

function drillStep(s: Omit<DrillStep, 'describe'>): DrillStep {
  return { ...s, describe: (p) => [s.title(p)] };
}

const param = (type: ParamSpec['type'], description: string): ParamSpec => ({ type, required: true, description });
const text = (v: unknown): string => String(v);

/** The keys a snapshot holds (live keys, for an etcd file). */
export function snapshotKeys(st: SnapshotStatus): number {
  return st.etcd?.liveKeys ?? st.totalKeys;
}

/** The drill's step types, over one drill's state. */
export function drillSteps(d: DrillState) {
  const restoredAuth = (e: unknown) => explainAuth(e, 'the restored cluster', d.scratchConn);
  const scratch = (): ScratchCluster => {
    if (!d.scratch) throw new Error('no scratch cluster was planned');
    return d.scratch;
  };

  const source = drillStep({
    type: 'drill-source',
    description: 'Read the source cluster: status, members, alarms.',
    params: { endpoints: param('list', 'client URLs of the source') },
    title: () => 'Read the source cluster (status, members, alarms)',
    async run(p, ctx) {
      const s = await sourceState(p.endpoints as string[], d.conn);
      d.before = s;
      ctx.event('ids', `source cluster ${s.clusterId}: members ${s.memberIds.join(',')}`, { clusterIdBefore: s.clusterId, memberIdsBefore: s.memberIds });
      return { ...s };
    },
  });

  const snapshot = drillStep({
    type: 'drill-snapshot',
    description: 'Take a snapshot of one member of the source.',
    params: { endpoint: param('url', 'the member to take it from'), file: param('path', 'where it is saved') },
    title: (p) => `Take a snapshot of ${text(p.endpoint)}`,
    async run(p) {
      const s = await saveSnapshot(resolveTarget({ ...d.conn, endpoints: [text(p.endpoint)] }), text(p.file)).catch((e: unknown) => {
        throw explainAuth(e, 'the source cluster', d.conn);
      });
      return { size: s.size, sha256: s.sha256, revision: s.revision, keys: s.keyCount };
    },
  });

  const verifySnapshot = drillStep({
    type: 'drill-verify-snapshot',
    description: "Verify the snapshot's sha256 and read its revision.",
    params: { file: param('path', 'the snapshot') },
    title: () => 'Verify the snapshot (sha256) and read its revision',
    async run(p) {
      const file = text(p.file);
      const st = await snapshotStatus(file).catch((e: Error) => {
        d.check('snapshot', false, e.message);
        throw new CheckFailed(e.message);
      });
      if (st.format === 'etcd' && st.etcd?.trailer === 'mismatch') {
        const detail = `${file}: its sha256 trailer (${st.etcd.storedSha256 ?? '?'}) does not match its contents (${st.sha256}); save a new one`;
        d.check('snapshot', false, detail);
        throw new CheckFailed(detail);
      }
      // Restore keeps the snapshot's auth: without a user, the scratch cluster would refuse every read.
      if (st.authEnabled && !d.scratchConn.credentials)
        throw new Error(`${file} has auth enabled, and so will the restored cluster: ${AUTH_HINTS['the restored cluster']}`);
      d.status = st;
      const verified = st.format === 'etcd' && st.etcd?.trailer === 'absent' ? ' (no sha256 trailer)' : ', sha256 verified';
      d.check('snapshot', true, `${st.format} snapshot${verified}: revision ${st.revision}, ${snapshotKeys(st)} keys`);
      return { format: st.format, revision: st.revision, keys: snapshotKeys(st), sha256: st.sha256 };
    },
  });

  const sourceAtRevision = drillStep({
    type: 'drill-source-at-revision',
    description: "Read the source's key count and HashKV at the snapshot's revision, while it still has it.",
    params: { endpoint: param('url', 'the member read'), revision: param('int', "the snapshot's revision") },
    title: (p) => `Read the source's key count and HashKV at revision ${text(p.revision)}`,
    async run(p) {
      d.sourceAt = await readSourceAt(text(p.endpoint), d.conn, Number(p.revision));
      return { ...d.sourceAt };
    },
  });

  const restore = drillStep({
    type: 'drill-restore',
    description: "Restore the snapshot into the first scratch member's data dir.",
    params: {
      file: param('path', 'the snapshot'),
      dataDir: param('path', "the first member's data dir"),
      runtime: param('string', 'lifeboat or etcd'),
      peerUrl: param('url', "the first member's peer URL"),
    },
    title: (p) => `Restore the snapshot into ${text(p.dataDir)} (${text(p.runtime)})`,
    async run(p) {
      const first = scratch().first;
      const file = text(p.file);
      const opts = { dataDir: first.dataDir, name: first.name, initialAdvertisePeerUrls: [first.peerUrl] };
      if (d.runtime === 'etcd') {
        const r = await restoreEtcdSnapshotFile(file, { ...opts, ...(d.etcdBin ? { etcdBin: d.etcdBin } : {}), onWarning: (w) => d.warnings.push(w) });
        d.restored = { clusterId: r.clusterId, memberId: r.memberId, token: r.initialClusterToken, revision: r.revision, keys: r.keys };
      } else {
        const r = await restoreSnapshot(file, opts);
        d.restored = { clusterId: r.clusterId, memberId: r.memberId, revision: r.revision, keys: r.keys };
      }
      first.id = d.restored.memberId;
      return { ...d.restored };
    },
  });

  const start = drillStep({
    type: 'drill-start',
    description: 'Start the restored member and wait for a leader.',
    params: { clientUrl: param('url', 'its client URL'), peerUrl: param('url', 'its peer URL') },
    title: () => `Start ${scratch().first.name} and wait for a leader`,
    async run() {
      const sc = scratch();
      const first = sc.first;
      await sc.start(first, 'new', `${first.name}=${first.peerUrl}`, d.restored?.token);
      const leader = await sc.waitLeader().catch((e: unknown) => {
        throw restoredAuth(e);
      });
      return { leader, pid: first.pid };
    },
  });

  const firstWrite = drillStep({
    type: 'drill-first-write',
    description: 'Write to the scratch cluster and read it back.',
    params: { endpoints: param('list', 'the scratch cluster') },
    title: () => 'Write to the scratch cluster and read it back',
    async run(p) {
      const c = clientFor(p.endpoints as string[], d.scratchConn);
      try {
        const key = `lifeboat-drill/${d.runId}`;
        const value = `written by lifeboat drill ${d.runId}`;
        const put = await c.put(key, value);
        const got = await c.range(key);
        if (got.kvs[0]?.value.toString() !== value) throw new Error(`wrote ${key} but read back ${got.kvs[0] ? 'another value' : 'nothing'}`);
        d.check('write', true, `the scratch cluster accepted a write (${key} at revision ${put.header.revision})`);
        return { key, revision: put.header.revision };
      } catch (e) {
        const err = restoredAuth(e) as Error;
        d.check('write', false, `the scratch cluster did not accept a write: ${err.message}`);
        throw new CheckFailed(err.message);
      } finally {
        c.close();
      }
    },
  });

  const member = drillStep({
    type: 'drill-member',
    description: 'Add a scratch member as a learner, start it, wait until it has caught up, promote it: as recovery re-adds members.',
    params: {
      name: param('string', 'its name'),
      peerUrl: param('url', 'its peer URL'),
      clientUrl: param('url', 'its client URL'),
      stabilizationMs: param('int', 'how long it must stay caught up before it is promoted'),
    },
    title: (p) => `Add ${text(p.name)} as a learner, start it, wait until caught up, promote it`,
    async run(p) {
      const m = scratch().members.find((x) => x.name === p.name);
      if (!m) throw new Error(`no scratch member ${text(p.name)}`);
      const r = await scratch()
        .addMember(m, Number(p.stabilizationMs))
        .catch((e: unknown) => {
          throw restoredAuth(e);
        });
      return { ...r, pid: m.pid };
    },
  });

  const verifyData = drillStep({
    type: 'drill-verify-data',
    description: "Compare the key count and KV hash at the snapshot's revision with the source.",
    params: { revision: param('int', "the snapshot's revision") },
    title: (p) => `Compare the key count and KV hash at revision ${text(p.revision)} with the source`,
    async run() {
      const [before, sourceAt, st] = [d.before, d.sourceAt, d.status];
      if (!before || !sourceAt || !st) throw new Error('the source and the snapshot were not read');
      const data = await checkData({
        sourceEndpoint: before.endpoint,
        sourceConn: d.conn,
        scratchEndpoints: scratch().endpoints(),
        scratchConn: d.scratchConn,
        source: sourceAt,
        snapshotKeys: snapshotKeys(st),
        sampleSize: d.sampleSize,
      }).catch((e: Error) => {
        d.check('data', false, `could not compare with the source: ${e.message}`);
        throw e;
      });
      d.data = data;
      checkDataResult(d, data);
      if (data.differences.length > 0) throw new Error(data.differences.join('; '));
      return { method: data.method, why: data.why, keys: data.keys, hash: data.hash, sample: data.sample ?? null };
    },
  });

  const checkMembers = drillStep({
    type: 'drill-check-members',
    description: 'Every scratch member answers, one leader, equal hashes.',
    params: { endpoints: param('list', 'the scratch cluster'), voters: param('int', 'the voters it must have') },
    title: () => 'Every member answers, one leader, equal hashes',
    async run(p, ctx: StepContext) {
      try {
        const r = await checkCluster(p.endpoints as string[], d.scratchConn, 30_000, ctx.signal);
        if (r.voters !== p.voters || r.learners !== 0) throw new Error(`${r.voters} voters and ${r.learners} learners, expected ${text(p.voters)} voters`);
        d.check('members', true, `${r.voters} voter${r.voters === 1 ? '' : 's'} healthy, leader ${r.leader}, HashKV equal at revision ${r.revision}`);
        return { ...r };
      } catch (e) {
        d.check('members', false, (e as Error).message);
        throw e;
      }
    },
  });

  const teardown = drillStep({
    type: 'drill-teardown',
    description: 'Stop the scratch members and remove the scratch dir.',
    params: { dir: param('path', 'the scratch dir') },
    title: () => 'Stop the scratch members and remove the scratch dir',
    async run() {
      const problems = d.scratch ? await d.scratch.stop() : [];
      if (d.madeDir) fs.rmSync(d.dir, { recursive: true, force: true });
      else for (const f of fs.readdirSync(d.dir)) fs.rmSync(path.join(d.dir, f), { recursive: true, force: true });
      if (problems.length > 0) throw new Error(problems.join('; '));
      return {};
    },
  });

  return { source, snapshot, verifySnapshot, sourceAtRevision, restore, start, firstWrite, member, verifyData, checkMembers, teardown };
}

/** The data comparison as checks: the key count, then the hash (or the sampled keys). */
function checkDataResult(d: DrillState, data: DataCheck): void {
  const { keys, revision } = data;
  d.check(
    'keys',
    keys.ok,
    keys.ok
      ? `${keys.scratch} keys at revision ${revision}, as the ${keys.against === 'source' ? 'source' : 'snapshot file (the source no longer has that revision)'}`
      : (data.differences.find((x) => x.startsWith('key count')) ?? 'key counts differ'),
  );
  const others = data.differences.filter((x) => !x.startsWith('key count'));
  if (data.method === 'hashkv') {
    const detail = `HashKV at revision ${revision} equal on both sides (${(data.hash.scratch ?? 0).toString(16)}, compact revision ${data.hash.scratchCompact})`;
    d.check('hash', others.length === 0, others.length === 0 ? detail : others.join('; '));
  } else {
    const n = data.sample ?? { compared: 0, skipped: 0 };
    const skipped = n.skipped > 0 ? ` (${n.skipped} changed on the source since, skipped)` : '';
    d.check('sample', others.length === 0, others.length === 0 ? `${n.compared} sampled keys equal at revision ${revision}${skipped}` : others.join('; '));
  }
}
