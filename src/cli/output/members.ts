// member list / add / remove / update / promote, as etcdctl prints them
// (IDs in hex, unpadded in simple and padded to 16 in tables; in JSON the
// uint64 numbers etcdctl writes).
import { hexId, paddedHexId } from '../../client/ids.js';
import type { JoinInstructions } from '../../client/joinInstructions.js';
import type { Member, MemberAddResult, MemberListResult } from '../../client/types.js';
import type { Renderer } from '../baseCommand.js';
import { headerJson, memberJson } from './json.js';
import { renderTable } from './table.js';

const status = (m: Member) => (m.name === '' ? 'unstarted' : 'started');

export const memberListOutput: Renderer<MemberListResult> = {
  simple: (r) =>
    r.members.map((m) => [hexId(m.id), status(m), m.name, m.peerURLs.join(','), m.clientURLs.join(','), String(m.isLearner)].join(', ')).join('\n'),
  table: (r) =>
    renderTable(
      ['ID', 'STATUS', 'NAME', 'PEER ADDRS', 'CLIENT ADDRS', 'IS LEARNER'],
      r.members.map((m) => [paddedHexId(m.id), status(m), m.name, m.peerURLs.join(','), m.clientURLs.join(','), String(m.isLearner)]),
      { right: [5] },
    ),
  json: (r) => ({ header: headerJson(r.header), members: r.members.map(memberJson) }),
};

export interface MemberAdded {
  result: MemberAddResult;
  join: JoinInstructions;
}

export const memberAddOutput: Renderer<MemberAdded> = {
  simple: ({ result, join }) => {
    const as = result.member.isLearner ? ' as learner ' : ' ';
    const lines = [`Member ${hexId(result.member.id)} added${as}to cluster ${hexId(result.header.clusterId)}`, ''];
    for (const [k, v] of join.env) lines.push(`${k}="${v}"`);
    lines.push('', 'Start the new member with these settings (environment above, or flags):', `  ${join.command}`);
    return lines.join('\n');
  },
  table: (a) => memberAddOutput.simple(a),
  json: ({ result, join }) => ({
    header: headerJson(result.header),
    member: memberJson(result.member),
    members: result.members.map(memberJson),
    environment: Object.fromEntries(join.env),
    command: join.command,
  }),
};

/** "Member <id> removed from cluster <cid>" and its kin. */
export function memberChangeOutput(verb: 'removed from' | 'updated in' | 'promoted in', id: bigint): Renderer<MemberListResult> {
  return {
    simple: (r) => `Member ${hexId(id)} ${verb} cluster ${hexId(r.header.clusterId)}`,
    table: (r) => `Member ${hexId(id)} ${verb} cluster ${hexId(r.header.clusterId)}`,
    json: (r) => ({ header: headerJson(r.header), members: r.members.map(memberJson) }),
  };
}
