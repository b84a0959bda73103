// Where a restarted agent goes on from, over hand-written manifests: the end of
// what is stored without a break from the first full, never a background full's
// revision with unstored revisions before it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resumePoint } from '../../src/backup/agent/backupAgent.js';
import type { Manifest } from '../../src/backup/manifest.js';

const full = (revision: number) => ({ kind: 'full', revision, fromRevision: revision, toRevision: revision }) as Manifest;
const seg = (fromRevision: number, toRevision: number) => ({ kind: 'segment', fromRevision, toRevision }) as Manifest;
const gap = (fromRevision: number, toRevision: number) => ({ kind: 'gap', fromRevision, toRevision }) as Manifest;

test('resumePoint: segments after the first full, a background full past them, a recorded gap and its chain full', () => {
  assert.equal(resumePoint([]), 0);
  assert.equal(resumePoint([seg(5, 9)]), 0, 'no full: a first full is needed');
  assert.equal(resumePoint([full(12)]), 12);
  assert.equal(resumePoint([full(12), seg(13, 20), seg(21, 43)]), 43);
  // killed -9 after a background full at 75 was committed, before the segment 44..74 was
  assert.equal(resumePoint([full(12), seg(13, 43), full(75)]), 43);
  assert.equal(resumePoint([full(12), seg(13, 43), full(44)]), 44);
  // a compaction past the agent: the gap and the new full continue the run
  assert.equal(resumePoint([full(12), seg(13, 117), gap(118, 127), full(128)]), 128);
  assert.equal(resumePoint([full(12), seg(13, 117), gap(118, 127), full(128), seg(129, 140)]), 140);
});
