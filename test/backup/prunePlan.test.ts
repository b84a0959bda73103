// backup prune's selection (src/backup/prunePlan.ts) against hand-written
// answers: a fixture of manifests over a month, a fixed clock, two policies.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clusterCatalog, type Catalog } from '../../src/backup/catalog.js';
import type { Manifest } from '../../src/backup/manifest.js';
import { planPrune, type PrunePlan } from '../../src/backup/prunePlan.js';
import { CLUSTER, full, gap, segment } from '../support/backupManifests.js';

const at = (s: string) => Date.parse(`2026-${s}Z`);
const NOW = at('12-02T12:00:00'); // a Wednesday
const OLD = 'cafe0000000000b2'; // the same cluster's ID before a recovery

const A: Manifest[] = [
  full(100, at('11-04T01:00:00')),
  segment(101, 199, at('11-04T02:00:00'), at('11-10T23:00:00')),
  full(200, at('11-11T01:00:00')),
  segment(201, 299, at('11-11T02:00:00'), at('11-17T23:00:00')),
  full(300, at('11-18T01:00:00')),
  segment(301, 339, at('11-18T02:00:00'), at('11-19T00:00:00')),
  gap(340, 350, at('11-19T05:00:00')),
  // after the gap and before the next full: in no chain, nothing can restore it
  segment(351, 399, at('11-19T06:00:00'), at('11-24T23:00:00')),
  full(400, at('11-25T01:00:00')),
  segment(401, 499, at('11-25T02:00:00'), at('11-27T23:00:00')),
  full(500, at('11-28T01:00:00')), // Saturday: last week's newest
  segment(501, 599, at('11-28T02:00:00'), at('11-29T23:00:00')),
  full(600, at('11-30T01:00:00')), // Monday, early
  segment(601, 649, at('11-30T02:00:00'), at('11-30T12:00:00')),
  full(650, at('11-30T13:00:00')), // Monday's newest
  // spans the full at 700; seen last inside the 24 h window: its first revision is the oldest kept revision
  segment(651, 720, at('11-30T14:00:00'), at('12-01T14:00:00')),
  full(700, at('12-01T13:00:00')),
  segment(721, 799, at('12-01T14:30:00'), at('12-02T05:00:00')),
  full(800, at('12-02T06:00:00')),
  segment(801, 850, at('12-02T06:00:00'), at('12-02T11:00:00')),
];
const B: Manifest[] = [full(10, at('10-01T01:00:00'), { clusterId: OLD }), segment(11, 20, at('10-01T02:00:00'), at('10-02T00:00:00'), { clusterId: OLD })];

const orphanOld = { key: `${CLUSTER}/seg-orphan-old.lbseg.gz`, size: 7, lastModified: new Date(NOW - 2 * 3_600_000) };
const orphanYoung = { key: `${CLUSTER}/seg-orphan-young.lbseg.gz`, size: 7, lastModified: new Date(NOW - 10 * 60_000) };

function catalog(): Catalog {
  return {
    clusters: [clusterCatalog(CLUSTER, A), clusterCatalog(OLD, B)],
    unreadable: [],
    orphans: [orphanOld, orphanYoung],
    objects: new Map(),
    manifestKeys: new Map(),
  };
}

const names = (p: PrunePlan) =>
  p.delete.map((v) => (v.kind === 'orphan' ? `orphan ${v.object}` : `${v.clusterId} ${v.kind} ${v.fromRevision}-${v.toRevision}`)).sort();
const a = (what: string) => `${CLUSTER} ${what}`;

test('prune keeps the window, the last N, daily and weekly fulls and what they need; deletes the rest, old orphans and gaps below what is kept', () => {
  const plan = planPrune(catalog(), { keepWithinMs: 24 * 3_600_000, keepLast: 2, keepDaily: 3, keepWeekly: 2 }, NOW);
  assert.deepEqual(
    names(plan),
    [
      a('full 100-100'),
      a('full 200-200'),
      a('full 300-300'),
      a('full 400-400'),
      a('full 600-600'),
      a('gap 340-350'),
      a('segment 101-199'),
      a('segment 201-299'),
      a('segment 301-339'),
      a('segment 351-399'),
      a('segment 401-499'),
      a('segment 501-599'),
      a('segment 601-649'),
      `orphan ${orphanOld.key}`,
    ].sort(),
  );
  assert.deepEqual(plan.kept, [
    {
      clusterId: CLUSTER,
      fulls: [
        { revision: 500, reasons: ['weekly'] },
        { revision: 650, reasons: ['daily', 'base of kept revisions'] },
        { revision: 700, reasons: ['last', 'daily', 'within'] },
        { revision: 800, reasons: ['last', 'daily', 'weekly', 'within'] },
      ],
      segments: 3,
      oldestRevision: 500,
    },
    // An old cluster ID: its newest full and its latest revision stay, however old.
    { clusterId: OLD, fulls: [{ revision: 10, reasons: ['last', 'base of kept revisions'] }], segments: 1, oldestRevision: 10 },
  ]);
  // Every victim with a manifest names it, and the object after it (a gap has none).
  for (const v of plan.delete.filter((x) => x.kind !== 'orphan')) {
    assert.ok(v.manifest?.endsWith('.manifest.json'));
    assert.equal(v.object === undefined, v.kind === 'gap');
  }
});

test('prune with the least kept: the newest full and the revisions of the last hour after it', () => {
  const plan = planPrune(catalog(), { keepWithinMs: 3_600_000, keepLast: 1, keepDaily: 0, keepWeekly: 0 }, NOW);
  const deleted = new Set(names(plan));
  const all = [...A, ...B].map((m) => `${m.clusterId} ${m.kind} ${m.fromRevision}-${m.toRevision}`);
  const kept = all.filter((n) => !deleted.has(n)).sort();
  assert.deepEqual(kept, [a('full 800-800'), a('segment 801-850'), `${OLD} full 10-10`, `${OLD} segment 11-20`].sort());
});

test('prune of a store whose newest full is older than the window keeps that full and the chain after it', () => {
  const ms = [
    full(100, at('11-01T00:00:00')),
    segment(101, 150, at('11-01T01:00:00'), at('11-02T00:00:00')),
    full(151, at('11-03T00:00:00')),
    segment(152, 160, at('11-03T01:00:00'), at('11-04T00:00:00')),
  ];
  const c: Catalog = { clusters: [clusterCatalog(CLUSTER, ms)], unreadable: [], orphans: [], objects: new Map(), manifestKeys: new Map() };
  const plan = planPrune(c, { keepWithinMs: 24 * 3_600_000, keepLast: 1, keepDaily: 7, keepWeekly: 0 }, NOW);
  assert.deepEqual(names(plan), [a('full 100-100'), a('segment 101-150')]);
});
