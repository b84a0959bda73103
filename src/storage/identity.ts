// Member and cluster IDs, derived as etcd derives them (SEMANTICS.md "Identity"),
// and the never-repeating cluster ID a recovery or forced new cluster receives.
import { createHash, randomBytes } from 'node:crypto';

function first8(data: Buffer | string): bigint {
  return createHash('sha1').update(data).digest().readBigUInt64BE(0);
}

/** At bootstrap and restore: sha1(sorted peer URLs joined with "" + cluster token). */
export function memberIdFor(peerURLs: string[], token: string): bigint {
  return first8([...peerURLs].sort().join('') + token);
}

/** For a runtime add: sha1(sorted peer URLs + decimal unix seconds), no token. */
export function runtimeMemberId(peerURLs: string[], unixSeconds: number): bigint {
  return first8([...peerURLs].sort().join('') + String(Math.floor(unixSeconds)));
}

/** At bootstrap: sha1 over the sorted member IDs, each 8 bytes big-endian. */
export function clusterIdFor(memberIds: bigint[]): bigint {
  const sorted = [...memberIds].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const buf = Buffer.alloc(8 * sorted.length);
  sorted.forEach((id, i) => buf.writeBigUInt64BE(id, 8 * i));
  return first8(buf);
}

/**
 * A recovered or forced cluster's ID: sha1(old ID ‖ new member ID ‖ 16 random
 * bytes), drawn again if it collides with the old ID or any recorded ancestor.
 */
export function newClusterId(oldClusterId: bigint, newMemberId: bigint, ancestors: bigint[], random: (n: number) => Buffer = randomBytes): bigint {
  for (let attempt = 0; attempt < 100; attempt++) {
    const buf = Buffer.alloc(16);
    buf.writeBigUInt64BE(oldClusterId, 0);
    buf.writeBigUInt64BE(newMemberId, 8);
    const id = first8(Buffer.concat([buf, random(16)]));
    if (id !== 0n && id !== oldClusterId && !ancestors.includes(id)) return id;
  }
  throw new Error('could not draw a fresh cluster ID');
}
