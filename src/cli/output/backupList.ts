// `lifeboat backup list` as text: one block per cluster ID.
import type { BackupListing, ListedCluster } from '../../backup/listing.js';
import { formatDuration } from '../../common/durations.js';
import { humanBytes } from './humanize.js';
import type { Renderer } from './render.js';

const range = (a: number, b: number) => (a === b ? `${a}` : `${a}..${b}`);

function encryptionText(c: ListedCluster): string {
  const e = c.encryption;
  if (e.encrypted === 0) return 'not encrypted';
  const to = `age, ${e.recipients.length} recipient${e.recipients.length === 1 ? '' : 's'}`;
  return e.encrypted === e.objects ? `encrypted (${to})` : `${e.encrypted} of ${e.objects} objects encrypted (${to})`;
}

function clusterText(c: ListedCluster): string[] {
  const out = [`cluster ${c.clusterId}`];
  const r = c.restorable;
  out.push(r ? `  restorable: revisions ${range(r.fromRevision, r.toRevision)}, ${r.fromTime} .. ${r.toTime}` : '  restorable: nothing (no full)');
  if (c.behind) out.push(`  behind:     ${c.behind.revisions} revision(s) behind ${c.behind.endpoint} (head ${c.behind.headRevision})`);
  out.push(`  stored:     ${humanBytes(c.storedSize)}, ${encryptionText(c)}`);
  out.push(`  fulls (${c.fulls.length}):`);
  for (const f of c.fulls) out.push(`    rev ${f.revision}  ${f.takenAt}  ${f.keyCount} keys  ${humanBytes(f.storedSize)} (${f.compression})`);
  out.push(`  chains (${c.chains.length}):`);
  for (const ch of c.chains) {
    const wide = ch.widestWindowMs > 0 ? `, widest time window ${formatDuration(ch.widestWindowMs)}` : '';
    out.push(
      `    revisions ${range(ch.fromRevision, ch.toRevision)}  ${ch.fromTime} .. ${ch.toTime}  full ${ch.fullRevision} + ${ch.segments} segment(s)  ${humanBytes(ch.storedSize)}${wide}`,
    );
  }
  out.push(`  segments:   ${c.segments.count} (${c.segments.revisions} revisions, ${humanBytes(c.segments.storedSize)})`);
  for (const g of c.gaps) out.push(`  gap:        revisions ${range(g.fromRevision, g.toRevision)} (${g.reason}${g.detail ? `: ${g.detail}` : ''})`);
  for (const h of c.holes.filter((x) => !x.recorded))
    out.push(`  HOLE:       revisions ${range(h.fromRevision, h.toRevision)} are in no object and no gap records why`);
  return out;
}

function listingText(l: BackupListing): string {
  const out: string[] = [];
  if (l.clusters.length === 0) out.push(`${l.store}: no backups`);
  for (const c of l.clusters) out.push(...clusterText(c));
  if (l.head && !l.head.inStore) out.push(`the cluster at ${l.head.endpoint} (ID ${l.head.clusterId}, head ${l.head.revision}) has no backup in this store`);
  if (l.orphans.count > 0) out.push(`${l.orphans.count} object(s) without a manifest (${humanBytes(l.orphans.size)}): not backups; prune deletes them`);
  for (const u of l.unreadable) out.push(`unreadable: ${u.problem}`);
  return out.join('\n');
}

export const backupListOutput: Renderer<BackupListing> = { simple: listingText, table: listingText };
