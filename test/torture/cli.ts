// `npm run torture -- [--minutes N] [--seconds N] [--seed S] [--members 3|5] [--planted POINT] [--kinds a,b]`:
// the fault suite over real members; prints the faults injected (counts by kind),
// ops/s with and without faults, the checker's verdict, and on a violation the
// file holding the smallest history window that shows it. Exit 0 only when the
// history is linearizable and every member came back and agrees.
import { parseArgs } from 'node:util';
import { torture } from './torture.js';
import { FAULT_KINDS, type FaultKind } from './nemesis.js';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string' },
    seconds: { type: 'string' },
    seed: { type: 'string', default: String(Date.now() % 100000) },
    members: { type: 'string', default: '3' },
    planted: { type: 'string' },
    kinds: { type: 'string' },
  },
});
const seconds = values.seconds !== undefined ? Number(values.seconds) : Number(values.minutes ?? 10) * 60;
const seed = Number(values.seed);
const members = Number(values.members);
if (!Number.isFinite(seconds) || seconds < 10) throw new Error(`--minutes/--seconds: at least 10 s, got ${seconds} s`);
if (members !== 3 && members !== 5) throw new Error(`--members: 3 or 5, got ${values.members}`);

console.log(`torture: ${members} members, ${seconds} s, seed ${seed}${values.planted ? `, planted bug ${values.planted}` : ''}`);
const kinds = values.kinds?.split(',').map((k) => k.trim());
const unknown = kinds?.filter((k) => !(FAULT_KINDS as string[]).includes(k));
if (unknown && unknown.length > 0) throw new Error(`--kinds: unknown fault ${unknown.join(', ')}; known: ${FAULT_KINDS.join(', ')}`);
const r = await torture({ seconds, seed, members, planted: values.planted, kinds: kinds as FaultKind[] | undefined });
console.log(`faults injected: ${FAULT_KINDS.map((k) => `${k} ${r.faults.get(k) ?? 0}`).join(', ')}`);
console.log(`operations: ${r.ops}; ok ops/s without faults ${r.opsPerSecQuiet.toFixed(1)}, during faults ${r.opsPerSecFaulty.toFixed(1)}`);
console.log(`linearizability: ${r.verdict} (${r.explored} states explored)${r.windowFile ? `; the smallest window that shows it: ${r.windowFile}` : ''}`);
for (const p of r.problems) console.log(`problem: ${p}`);
process.exitCode = r.verdict === 'ok' && r.problems.length === 0 ? 0 : 1;
