// Initial and forced persisted states: what a founding member starts from, and
// the single-voter state that recovery builds from a survivor's log.
import { encodeConfChange } from './confChange.js';
import { EntryType, NONE, type Entry, type NodeId, type PersistedState } from './types.js';

/** A node that has never run: no log, no configuration (it learns both from the leader). */
export function emptyState(): PersistedState {
  return { hardState: { term: 0, vote: NONE, commit: 0 }, snapshot: { index: 0, term: 0, conf: { voters: [], learners: [] } }, entries: [] };
}

/**
 * The identical state every founding member writes: one committed addVoter entry
 * per member (sorted by ID) at term 1, so members that join later learn the
 * founding configuration from the log like any other change.
 */
export function bootstrapState(members: { id: NodeId; context: Uint8Array }[]): PersistedState {
  const sorted = [...members].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const entries: Entry[] = sorted.map((m, i) => ({
    term: 1,
    index: i + 1,
    type: EntryType.ConfChange,
    data: encodeConfChange({ type: 'addVoter', nodeId: m.id, context: m.context }),
  }));
  return { hardState: { term: 1, vote: NONE, commit: entries.length }, snapshot: { index: 0, term: 0, conf: { voters: [], learners: [] } }, entries };
}

/**
 * Recovery's primitive: from a survivor's persisted state, a state in which `self`
 * is the only voter and every kept entry is committed, so it elects itself at once.
 * Entries past the old commit index are kept (the old leader may have acknowledged
 * them) unless discardUncommitted. Old membership changes in the log become no-ops:
 * the configuration is the new one, and the application resets its member table.
 */
export function forceNewClusterState(p: PersistedState, self: NodeId, opts: { discardUncommitted: boolean }): PersistedState {
  const kept = opts.discardUncommitted ? p.entries.filter((e) => e.index <= p.hardState.commit) : p.entries;
  const entries = kept.map((e) => (e.type === EntryType.ConfChange ? { ...e, type: EntryType.Normal, data: new Uint8Array(0) } : e));
  const last = entries.length > 0 ? entries[entries.length - 1].index : p.snapshot.index;
  return {
    hardState: { term: p.hardState.term, vote: NONE, commit: last },
    snapshot: { ...p.snapshot, conf: { voters: [self], learners: [] } },
    entries,
  };
}
