// What the member steps share: their common parameters, finding a member by name,
// URL or ID, and recording the cluster and member IDs around a membership change
// (the run keeps the first "before" and the latest "after").
import { clientFor } from '../../client/etcdClient.js';
import { resolveIdText } from '../../common/ids.js';
import type { Member, MemberListResult, ResponseHeader } from '../../client/types.js';
import { answers } from '../../recovery/fence.js';
import { statusOf } from '../../ops/memberOps.js';
import type { StepContext } from '../stepTypes.js';

export const endpointsParam = { type: 'list' as const, required: true, description: 'client URLs of the cluster' };
export const timeoutParam = (ms: number) => ({ type: 'duration' as const, default: ms, description: 'give up after this long' });

export function findMember(members: Member[], ref: string): Member | undefined {
  const byName = members.find((m) => m.name === ref || m.peerURLs.includes(ref) || m.clientURLs.includes(ref));
  if (byName) return byName;
  // Hex or decimal (as etcdctl prints IDs in JSON): the reading that names a member wins.
  const id = resolveIdText(
    ref,
    members.map((m) => m.id),
  );
  return id === undefined ? undefined : members.find((m) => m.id === id);
}

function idsOf(l: MemberListResult): { clusterId: string; memberIds: string[] } {
  return { clusterId: l.header.clusterId.toString(16), memberIds: l.members.map((m) => m.id.toString(16)) };
}

/** Records the cluster and member IDs before and after a membership change (the run keeps the first before, the latest after). */
export function recordIds(ctx: StepContext, what: string, before: MemberListResult, after: MemberListResult): void {
  const b = idsOf(before);
  const a = idsOf(after);
  ctx.event('ids', `${what}: members ${b.memberIds.join(',') || 'none'} -> ${a.memberIds.join(',') || 'none'} (cluster ${a.clusterId})`, {
    clusterIdBefore: b.clusterId,
    memberIdsBefore: b.memberIds,
    clusterIdAfter: a.clusterId,
    memberIdsAfter: a.memberIds,
  });
}

/** recordIds with the member list read after the change; the change is done, so a failed read is only reported. */
export async function recordIdsAfter(ctx: StepContext, what: string, before: MemberListResult, endpoints: string[]): Promise<void> {
  try {
    recordIds(ctx, what, before, await listMembers(endpoints, ctx));
  } catch (e) {
    ctx.event('warning', `${what}: member IDs after the change not recorded: ${(e as Error).message}`);
  }
}

export async function listMembers(endpoints: string[], ctx: StepContext): Promise<MemberListResult> {
  const c = clientFor(endpoints, ctx.connection);
  try {
    return await c.memberList();
  } finally {
    c.close();
  }
}

export async function alreadyServing(clientUrl: string, ctx: StepContext): Promise<boolean> {
  return (await answeringMember(clientUrl, ctx)) !== undefined;
}

/** The member that answers Status at clientUrl (its response header: member and cluster ID), or undefined when nothing does. */
export async function answeringMember(clientUrl: string, ctx: StepContext): Promise<ResponseHeader | undefined> {
  // A closed port fails at once here; a gRPC call would wait out its dial timeout.
  if (!(await answers(clientUrl, ctx.connection.dialTimeoutMs))) return undefined;
  try {
    return (await statusOf(clientUrl, { ...ctx.connection, dialTimeoutMs: 1000 })).header;
  } catch {
    return undefined;
  }
}
