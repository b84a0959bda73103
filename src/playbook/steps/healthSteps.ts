// Reading a cluster's health without changing it: wait-healthy (a leader and a
// linearizable read) and check-cluster (every member, one leader, equal HashKV).
import { checkCluster, waitHealthy } from '../../ops/memberOps.js';
import type { StepDefinition } from '../stepTypes.js';
import { endpointsParam, listMembers, recordIds, timeoutParam } from './memberCommon.js';

export const waitHealthyStep: StepDefinition = {
  type: 'wait-healthy',
  description: 'Wait until the cluster has a leader and serves a linearizable read.',
  params: { endpoints: endpointsParam, timeout: timeoutParam(60_000) },
  describe: (p) => [`wait for a leader at ${(p.endpoints as string[]).join(', ')}`],
  async run(p, ctx) {
    const r = await waitHealthy(p.endpoints as string[], ctx.connection, Number(p.timeout), ctx.signal);
    ctx.progress(`leader ${r.leader}`);
    return r;
  },
};

export const checkClusterStep: StepDefinition = {
  type: 'check-cluster',
  description: 'Every member answers, exactly one leader, HashKV equal on all members at one revision.',
  params: {
    endpoints: endpointsParam,
    'expect-voters': { type: 'int', default: 0, description: 'fail unless there are this many voters (0: any)' },
    timeout: timeoutParam(30_000),
  },
  describe: (p) => [
    `check ${(p.endpoints as string[]).join(', ')}: one leader, equal HashKV${Number(p['expect-voters']) ? `, ${String(p['expect-voters'])} voters` : ''}`,
  ],
  async run(p, ctx) {
    const r = await checkCluster(p.endpoints as string[], ctx.connection, Number(p.timeout), ctx.signal);
    if (Number(p['expect-voters']) && r.voters !== Number(p['expect-voters'])) throw new Error(`${r.voters} voters, expected ${String(p['expect-voters'])}`);
    ctx.progress(`${r.voters} voters, ${r.learners} learners, leader ${r.leader}, HashKV equal at revision ${r.revision}`);
    const endpoints = p.endpoints as string[];
    await listMembers(endpoints, ctx).then(
      (now) => recordIds(ctx, 'checked', now, now),
      (e: Error) => ctx.event('warning', `member IDs not recorded: ${e.message}`),
    );
    return { ...r };
  },
};
