// What a drill reads of the source cluster (status, members, alarms): before it
// starts and again after, to show the source saw only reads; and how an auth
// refusal by either cluster is said.
import { clientFor, type ConnectionOptions } from '../client/etcdClient.js';
import { isAuthRefusal } from '../client/errors.js';
import { statusOf } from '../ops/memberOps.js';

export interface SourceState {
  endpoint: string;
  version: string;
  clusterId: string;
  memberIds: string[];
  /** `id:learner` or `id:voter`, sorted: what must not change */
  membership: string[];
  alarms: string[];
  revision: number;
}

/** What to give when a cluster refuses the drill's credentials (the drill snapshots, hashes and adds members: root's role). */
export const AUTH_HINTS = {
  'the source cluster': 'give --user and the password of a user of the source with the root role, e.g. --user root',
  'the restored cluster':
    "it keeps the snapshot's users, roles and passwords as they were when it was saved: give --user and the password of one of them with the root role, e.g. --user root",
} as const;

/**
 * An auth refusal said as what it is: which cluster refused, which user (never the
 * password), and what to give; any other error as it is.
 */
export function explainAuth(e: unknown, cluster: keyof typeof AUTH_HINTS, conn: ConnectionOptions): unknown {
  if (!isAuthRefusal(e)) return e;
  const user = conn.credentials?.user;
  const refused = user ? `rejected user ${user}` : 'the drill gave no user';
  return new Error(`${cluster} has auth enabled and ${refused} (${e.serverMessage}); ${AUTH_HINTS[cluster]}`);
}

/** The source as the first member that answers sees it (`preferred` asked first). */
export async function sourceState(endpoints: string[], conn: ConnectionOptions, preferred?: string): Promise<SourceState> {
  let last: unknown;
  for (const ep of preferred ? [preferred, ...endpoints.filter((e) => e !== preferred)] : endpoints) {
    try {
      const status = await statusOf(ep, conn);
      const c = clientFor([ep], conn);
      try {
        const members = (await c.memberList()).members;
        const alarms = (await c.alarmList()).alarms;
        return {
          endpoint: ep,
          version: status.version,
          clusterId: status.header.clusterId.toString(16),
          memberIds: members.map((m) => m.id.toString(16)),
          membership: members.map((m) => `${m.id.toString(16)}:${m.isLearner ? 'learner' : 'voter'}`).sort(),
          alarms: alarms.map((a) => `${a.memberId.toString(16)}:${a.alarm}`).sort(),
          revision: status.header.revision,
        };
      } finally {
        c.close();
      }
    } catch (e) {
      // Every member has the same users: a refusal is the answer, not one member's trouble.
      if (isAuthRefusal(e)) throw explainAuth(e, 'the source cluster', conn);
      last = e;
    }
  }
  throw new Error(`no member of the source answered at ${endpoints.join(', ')}: ${(last as Error | undefined)?.message ?? 'no endpoints'}`);
}
