// Growing the cluster by one member, as recovery re-adds them: add-learner,
// wait-caught-up (a learner that stalls is removed again), promote.
import { clientFor } from '../../client/etcdClient.js';
import { parseMemberId } from '../../client/ids.js';
import type { MemberListResult } from '../../client/types.js';
import { LearnerStalledError, promoteWhenReady, waitCaughtUp, waitUntil } from '../../ops/memberOps.js';
import { clusterRuntime, parseRuntimeChoice, resolveRuntime, runtimeOfDataDir } from '../../ops/runtime.js';
import { SafetyCheckError, type StepDefinition } from '../stepTypes.js';
import { endpointsParam, findMember, listMembers, recordIds, recordIdsAfter, timeoutParam } from './memberCommon.js';

export const addLearner: StepDefinition = {
  type: 'add-learner',
  description: 'Add a member as a learner (non-voting) — or find it already added — and give the settings it must start with.',
  params: {
    endpoints: endpointsParam,
    name: { type: 'string', required: true, description: 'the new member name' },
    'peer-url': { type: 'url', required: true, description: 'its peer URL' },
    runtime: { type: 'string', default: 'auto', description: "the new member's runtime (lifeboat, etcd); must be the cluster's (auto: the cluster's)" },
    'data-dir': { type: 'string', default: '', description: "the new member's data dir, if known: an existing one must be of the same runtime" },
    timeout: timeoutParam(60_000),
  },
  describe: (p) => [`add ${String(p.name)} (${String(p['peer-url'])}) as a learner`],
  async run(p, ctx) {
    const endpoints = p.endpoints as string[];
    const peerUrl = String(p['peer-url']);
    // A member of another runtime cannot join (a Lifeboat learner for an etcd cluster): refused before the add.
    const cluster = await clusterRuntime(endpoints, ctx.connection);
    const runtime = resolveRuntime(
      parseRuntimeChoice(typeof p.runtime === 'string' ? p.runtime : 'auto', 'runtime'),
      cluster.runtime,
      `the cluster at ${endpoints.join(',')} (version ${cluster.version})`,
    );
    const dir = typeof p['data-dir'] === 'string' ? p['data-dir'] : '';
    const layout = dir ? runtimeOfDataDir(dir) : undefined;
    if (layout && layout !== runtime)
      throw new SafetyCheckError(`data dir ${dir} belongs to a ${layout} member, but the cluster runs ${runtime}: give ${String(p.name)} an empty data dir`);
    const before = await listMembers(endpoints, ctx);
    let me = before.members.find((m) => m.peerURLs.includes(peerUrl));
    let after: MemberListResult | undefined;
    if (me) {
      ctx.progress(`${String(p.name)} is already a member (${me.id.toString(16)}); not adding it twice`);
    } else {
      // The strict check refuses until every voter has been connected for 5 s (after a
      // start or a promotion): asked again every 100 ms, a refusal costing one RPC.
      const added = await waitUntil(
        `${String(p.name)} to be added`,
        Number(p.timeout),
        async () => {
          const c = clientFor(endpoints, ctx.connection);
          try {
            return await c.memberAdd([peerUrl], { learner: true });
          } catch (e) {
            if (/unhealthy cluster|not enough started/.test((e as Error).message)) return undefined;
            throw e;
          } finally {
            c.close();
          }
        },
        100,
        ctx.signal,
      );
      me = added.member;
      ctx.progress(`added ${String(p.name)} as learner ${me.id.toString(16)}`);
      // The leader's list as it applied the add: a member list served by a follower may not have applied it yet.
      after = { header: added.header, members: added.members };
    }
    const afterList = after ?? (await listMembers(endpoints, ctx));
    recordIds(ctx, `add ${String(p.name)}`, before, afterList);
    const now = afterList.members;
    const initial = now
      .filter((m) => m.id === me.id || m.name !== '')
      .flatMap((m) => (m.id === me.id ? [`${String(p.name)}=${peerUrl}`] : m.peerURLs.map((u) => `${m.name}=${u}`)))
      .join(',');
    return { id: me.id.toString(16), 'initial-cluster': initial, runtime };
  },
};

export const waitCaughtUpStep: StepDefinition = {
  type: 'wait-caught-up',
  description:
    "Wait until a learner's applied index reaches the leader's raft index and stays there for the stabilization time; a learner that stops making progress is removed and reported.",
  params: {
    endpoints: endpointsParam,
    'learner-url': { type: 'url', required: true, description: "the learner's client URL" },
    'learner-id': { type: 'string', required: true, description: "the learner's member ID (hex)" },
    stabilization: { type: 'duration', default: 5000, description: 'how long it must stay caught up' },
    'stall-timeout': { type: 'duration', default: 30_000, description: 'remove it if it makes no progress for this long' },
    lag: { type: 'int', default: 2, description: 'entries it may be behind and still count as caught up' },
  },
  describe: (p) => [`wait until ${String(p['learner-url'])} has caught up and stayed so for ${Number(p.stabilization) / 1000}s`],
  async run(p, ctx) {
    const endpoints = p.endpoints as string[];
    const stabilization = Number(p.stabilization);
    try {
      const r = await waitCaughtUp(String(p['learner-url']), endpoints, ctx.connection, {
        lag: Number(p.lag),
        stabilizationMs: stabilization,
        stallMs: Number(p['stall-timeout']),
        onProgress: (t) => ctx.progress(t),
        // Recorded so the audit shows the stabilization gate: promotion comes at least this long after.
        onCaughtUp: (applied, leaderIndex) =>
          ctx.event(
            'caught-up',
            `learner ${String(p['learner-id'])} caught up (applied ${applied} of ${leaderIndex}); promoting once it stays so for ${stabilization / 1000}s`,
            { applied, leaderIndex, at: Date.now() },
          ),
        signal: ctx.signal,
      });
      return { ...r };
    } catch (e) {
      // Only a learner that itself stopped making progress is removed; no leader is the cluster's problem.
      if (ctx.signal.aborted || !(e instanceof LearnerStalledError)) throw e;
      const id = parseMemberId(String(p['learner-id']));
      const c = clientFor(endpoints, ctx.connection);
      try {
        const before = await c.memberList();
        await c.memberRemove(id);
        ctx.event('warning', `removed learner ${String(p['learner-id'])}: ${e.message}`);
        await recordIdsAfter(ctx, `remove stalled learner ${String(p['learner-id'])}`, before, endpoints);
      } finally {
        c.close();
      }
      throw new Error(`${e.message}; learner ${String(p['learner-id'])} was removed from the cluster`);
    }
  },
};

export const promote: StepDefinition = {
  type: 'promote',
  description: 'Promote a caught-up learner to a voter (retried while the leader says it is not yet in sync).',
  params: { endpoints: endpointsParam, member: { type: 'string', required: true, description: 'member ID (hex), name or URL' }, timeout: timeoutParam(60_000) },
  describe: (p) => [`promote ${String(p.member)} to a voter`],
  async run(p, ctx) {
    const endpoints = p.endpoints as string[];
    const before = await listMembers(endpoints, ctx);
    const m = findMember(before.members, String(p.member));
    if (!m) throw new Error(`no member ${String(p.member)} in the cluster`);
    if (!m.isLearner) {
      ctx.progress(`${String(p.member)} is already a voter`);
      recordIds(ctx, `${String(p.member)} already a voter`, before, before);
      return { id: m.id.toString(16), promoted: false };
    }
    await promoteWhenReady(endpoints, m.id, ctx.connection, Number(p.timeout), ctx.signal);
    await recordIdsAfter(ctx, `promote ${m.id.toString(16)}`, before, endpoints);
    ctx.progress(`promoted ${m.id.toString(16)}`);
    return { id: m.id.toString(16), promoted: true };
  },
};
