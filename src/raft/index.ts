// The Raft core's public surface.
export * from './types.js';
export { Raft, PLANTED_BUGS, type PlantedBug, type RaftOptions, type RaftStatus } from './raft.js';
export { ProgressState } from './progress.js';
export { encodeConfChange, decodeConfChange } from './confChange.js';
export { bootstrapState, emptyState, forceNewClusterState } from './bootstrap.js';
export { InvariantError } from './invariant.js';
