// Fencing before a forced new cluster: every old member's peer and client URLs
// are probed; if any answers, recovery is refused (a live old member could serve
// the old cluster next to the new one). --assume-dead is the only override.
import net from 'node:net';
import { hostPort } from '../common/urls.js';

export interface OldMember {
  id: string;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
}

export interface FenceResult {
  /** Members that answered on some URL, with the URL. */
  alive: Array<{ member: OldMember; url: string }>;
  /** Members that answered but were declared dead by the operator. */
  assumedDead: Array<{ member: OldMember; url: string }>;
  probed: number;
}

/** Does anything accept a TCP connection at url within timeoutMs? */
export function answers(url: string, timeoutMs: number): Promise<boolean> {
  const [host, port] = hostPort(url).split(/:(?=\d+$)/);
  return new Promise((resolve) => {
    const s = net.connect({ host, port: Number(port) });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

export async function probeOldMembers(members: OldMember[], assumeDead: string[], timeoutMs = 1000): Promise<FenceResult> {
  const dead = new Set(assumeDead.map((s) => s.toLowerCase().replace(/^0x/, '').replace(/^0+/, '')));
  const result: FenceResult = { alive: [], assumedDead: [], probed: 0 };
  await Promise.all(
    members.map(async (m) => {
      for (const url of [...m.peerURLs, ...m.clientURLs]) {
        result.probed++;
        if (!(await answers(url, timeoutMs))) continue;
        (dead.has(m.id.replace(/^0+/, '')) || dead.has(m.name.toLowerCase()) ? result.assumedDead : result.alive).push({ member: m, url });
        return;
      }
    }),
  );
  return result;
}
