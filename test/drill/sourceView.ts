// What a drill must leave as it was on the source cluster: its revision,
// membership and alarms, read on every member.
import { clientFor } from '../../src/client/etcdClient.js';

const conn = { dialTimeoutMs: 2000, commandTimeoutMs: 10_000 };

interface SourceView {
  revision: number;
  members: string[];
  alarms: string[];
}

/** What the drill must not change: the source's revision, membership and alarms, read on every member. */
export async function sourceView(endpoints: string[]): Promise<SourceView[]> {
  const out: SourceView[] = [];
  for (const ep of endpoints) {
    const c = clientFor([ep], conn);
    try {
      const s = await c.status();
      const m = await c.memberList();
      const a = await c.alarmList();
      out.push({
        revision: s.header.revision,
        members: m.members.map((x) => `${x.id.toString(16)}:${x.name}:${x.isLearner}:${x.peerURLs.join()}`).sort(),
        alarms: a.alarms.map((x) => `${x.memberId.toString(16)}:${x.alarm}`),
      });
    } finally {
      c.close();
    }
  }
  return out;
}
