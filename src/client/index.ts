// The client for etcd's v3 API, used by the commands (against real etcd or Lifeboat).
export { EtcdClient, type EtcdClientOptions } from './etcdClient.js';
export { EtcdClientError, type ClientErrorKind } from './errors.js';
export { parseEndpoint, parseEndpoints, type Endpoint } from './endpoints.js';
export { parseMemberId, parseLeaseId, hexId, paddedHexId } from './ids.js';
export { selectKeys, prefixEnd, ALL_KEYS, type KeySelection } from './keyRange.js';
export { targetEndpoints, forEachEndpoint, checkHealth, findLeaderEndpoint, type EndpointOutcome, type HealthResult } from './perEndpoint.js';
export { assessRemoval, describeMember, planRemoval, type RemovalRisk } from './removalRisk.js';
export { joinInstructions, type JoinInstructions } from './joinInstructions.js';
export { saveSnapshot, verifySnapshotTrailer, TrailerCheck, type SnapshotSaved } from './snapshotSave.js';
export type { TlsOptions } from './tls.js';
export type * from './types.js';
export { WatchStream, type WatchBatch, type WatchEvent, type WatchOptions } from './watchStream.js';
