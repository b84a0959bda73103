// The Raft core's public surface.
export * from './types.js';
export { type RaftOptions } from './raft.js';
export { RawNode, type TrafficCounts } from './rawNode.js';
export { PLANTED_BUGS, type PlantedBug, type RaftKnobs } from './knobs.js';
export { ProgressState } from './progress.js';
export { encodeConfChange, decodeConfChange } from './confChange.js';
export { bootstrapState, emptyState, forceNewClusterState } from './bootstrap.js';
export { InvariantError } from './invariant.js';
