// A TransportHost for in-process transport tests: a member of `clusterId` that
// counts refusals and unreachable peers and has no snapshots unless given some.
import type { TransportHost } from '../../src/transport/peerTransport.js';

export function host(memberId: bigint, clusterId: bigint, counts: { unreachable: number; refused: number }): TransportHost {
  return {
    memberId,
    clusterId: () => clusterId,
    ancestors: () => [],
    isRemoved: () => false,
    deliver: () => undefined,
    identity: () => ({
      cluster_id: clusterId.toString(),
      member_id: memberId.toString(),
      parent_cluster_id: '0',
      superseded: false,
      removed: false,
      members_json: '[]',
    }),
    forward: () => Promise.resolve({ json: '', error_code: 0, error_message: '' }),
    refused: () => void counts.refused++,
    unreachable: () => void counts.unreachable++,
    snapshotData: () => Promise.reject(new Error('no snapshots here')),
    snapshotSent: () => undefined,
    incomingSnapshotFile: () => {
      throw new Error('no snapshots here');
    },
    snapshotReceived: () => undefined,
    logEvent: () => undefined,
  };
}
