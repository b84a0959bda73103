// The CPU profile summary `npm run bench -- profile` prints: a frame of the member
// bundle (dist/member.cjs) counts as the module it came from, through the source
// map the build writes beside the bundle; without the map it stays the bundle's.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { summarize } from '../../bench/cpuProfileSummary.js';

const BUNDLE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../member.cjs');

/** A profile with two samples, both in the function defined at `needle` in `bundle`. */
function profileAt(bundle: string, needle: string, dir: string): string {
  const lines = fs.readFileSync(bundle, 'utf8').split('\n');
  const lineNumber = lines.findIndex((l) => l.includes(needle));
  assert.ok(lineNumber >= 0, `${needle} is in ${bundle}`);
  const columnNumber = lines[lineNumber].indexOf(needle);
  const frame = (functionName: string, url: string, line: number, column: number) => ({ functionName, url, lineNumber: line, columnNumber: column });
  const profile = {
    nodes: [
      { id: 1, callFrame: frame('(root)', '', -1, -1), children: [2] },
      { id: 2, callFrame: frame('rangeAt', pathToFileURL(bundle).href, lineNumber, columnNumber) },
    ],
    samples: [2, 2],
    timeDeltas: [1000, 1000],
  };
  const file = path.join(dir, 'CPU.test.cpuprofile');
  fs.writeFileSync(file, JSON.stringify(profile));
  return file;
}

test('a member bundle frame is counted as its module; a bundle without its map as itself', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-profile-summary-'));
  try {
    const mapped = summarize(profileAt(BUNDLE, 'rangeAt(r, rev, latest, limit, keysOnly) {', dir));
    assert.equal(mapped.byArea[0].name, 'lifeboat src/kv');
    assert.match(mapped.byFunction[0].name, /^rangeAt src\/kv\/revisionTables\.ts:\d+$/);

    const copy = path.join(dir, 'unmapped.cjs');
    fs.copyFileSync(BUNDLE, copy);
    const unmapped = summarize(profileAt(copy, 'rangeAt(r, rev, latest, limit, keysOnly) {', dir));
    assert.equal(unmapped.byArea[0].name, 'other');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
