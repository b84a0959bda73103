// Changing who the cluster's members are and where they listen: remove-member
// (nothing to do if it is already gone) and update-peer-urls.
import { clientFor } from '../../client/etcdClient.js';
import { waitUntil } from '../../ops/memberOps.js';
import type { StepDefinition } from '../stepTypes.js';
import { endpointsParam, findMember, listMembers, recordIds, recordIdsAfter, timeoutParam } from './memberCommon.js';

export const removeMember: StepDefinition = {
  type: 'remove-member',
  description: 'Remove a member from the cluster (nothing to do if it is already gone).',
  params: { endpoints: endpointsParam, member: { type: 'string', required: true, description: 'member ID (hex), name or URL' }, timeout: timeoutParam(30_000) },
  describe: (p) => [`remove ${String(p.member)} from the cluster`],
  async run(p, ctx) {
    const endpoints = p.endpoints as string[];
    const before = await listMembers(endpoints, ctx);
    const m = findMember(before.members, String(p.member));
    if (!m) {
      ctx.progress(`${String(p.member)} is not a member; nothing to remove`);
      recordIds(ctx, `${String(p.member)} already gone`, before, before);
      return { removed: false };
    }
    // The member to remove may be the leader that just died: while the others
    // elect a new one, a removal fails (no leader, or the forward to the dead one).
    // Retried, bounded; an attempt whose answer was lost shows as the member gone.
    await waitUntil(
      `${m.id.toString(16)} to be removed`,
      Number(p.timeout),
      async () => {
        const c = clientFor(endpoints, ctx.connection);
        try {
          await c.memberRemove(m.id);
          return true;
        } catch (e) {
          if (!(await listMembers(endpoints, ctx)).members.some((x) => x.id === m.id)) return true;
          throw e;
        } finally {
          c.close();
        }
      },
      500,
      ctx.signal,
    );
    await recordIdsAfter(ctx, `remove ${m.id.toString(16)}`, before, endpoints);
    ctx.progress(`removed ${m.id.toString(16)}`);
    return { removed: true, id: m.id.toString(16) };
  },
};

export const updatePeerUrls: StepDefinition = {
  type: 'update-peer-urls',
  description: "Change a member's peer URLs (then restart it with them).",
  params: {
    endpoints: endpointsParam,
    member: { type: 'string', required: true, description: 'member ID (hex) or name' },
    'peer-urls': { type: 'list', required: true, description: 'the new peer URLs' },
  },
  describe: (p) => [`set ${String(p.member)}'s peer URLs to ${(p['peer-urls'] as string[]).join(',')}`],
  async run(p, ctx) {
    const endpoints = p.endpoints as string[];
    const urls = p['peer-urls'] as string[];
    const before = await listMembers(endpoints, ctx);
    const m = findMember(before.members, String(p.member));
    if (!m) throw new Error(`no member ${String(p.member)} in the cluster`);
    recordIds(ctx, `peer URLs of ${m.id.toString(16)}`, before, before);
    if ([...m.peerURLs].sort().join(',') === [...urls].sort().join(',')) return { id: m.id.toString(16), updated: false };
    const c = clientFor(endpoints, ctx.connection);
    try {
      await c.memberUpdate(m.id, urls);
    } finally {
      c.close();
    }
    return { id: m.id.toString(16), updated: true };
  },
};
