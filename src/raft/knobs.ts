// Test knobs of the Raft core, passed at construction (as CockroachDB's testing
// knobs); production code passes none. The planted bugs are deliberate defects the
// simulator and the core tests must catch (npm run sim -- --plant-bug NAME).

export type PlantedBug = 'learner-counts-toward-commit' | 'commit-previous-term-by-counting' | 'vote-not-persisted' | 'skip-log-consistency-check';

export const PLANTED_BUGS: PlantedBug[] = [
  'learner-counts-toward-commit',
  'commit-previous-term-by-counting',
  'vote-not-persisted',
  'skip-log-consistency-check',
];

export interface RaftKnobs {
  plantedBug?: PlantedBug;
}
