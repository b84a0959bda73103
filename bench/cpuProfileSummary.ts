// Where a .cpuprofile's time went: self time per function and per area
// (gRPC, protobuf, SQLite, Raft, storage, GC, idle...), largest first.
import fs from 'node:fs';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface Share {
  name: string;
  ms: number;
  percent: number;
}

/** Which part of the member a frame belongs to, from its script URL. */
export function areaOf(url: string, fn: string): string {
  if (fn === '(idle)') return 'idle';
  if (fn === '(garbage collector)') return 'GC';
  if (fn === '(program)') return 'V8/native (program)';
  // Packages bundled at build (scripts/build/bundleVendor.ts) run from dist/vendor/.
  if (url.includes('@grpc/grpc-js') || url.includes('/vendor/grpc-js.js')) return 'gRPC (grpc-js)';
  if (url.includes('protobufjs') || url.includes('proto-loader')) return 'protobuf';
  if (url.includes('better-sqlite3')) return 'SQLite (better-sqlite3)';
  if (url.includes('/vendor/oclif-core.js')) return 'CLI (oclif)';
  const m = url.includes('node_modules') ? null : /\/(?:dist\/)?src\/([^/]+)\//.exec(url);
  if (m) return `lifeboat src/${m[1]}`;
  if (url.startsWith('node:')) return `node core (${url.slice(5).split('/')[0]})`;
  if (url === '') return `native: ${fn || '(anonymous)'}`;
  return 'other';
}

const maps = new Map<string, { map: SourceMap; dir: string } | null>();

/**
 * A frame of a bundle (dist/member.cjs, scripts/build/bundleEntries.ts) as the module it
 * came from, through the source map the build writes beside the bundle; any other
 * frame as it is.
 */
function original(url: string, line: number, column: number): { url: string; line: number } {
  if (!url.endsWith('.cjs')) return { url, line };
  let m = maps.get(url);
  if (m === undefined) {
    const file = url.startsWith('file:') ? fileURLToPath(url) : url;
    try {
      m = { map: new SourceMap(JSON.parse(fs.readFileSync(`${file}.map`, 'utf8')) as ConstructorParameters<typeof SourceMap>[0]), dir: path.dirname(file) };
    } catch {
      m = null; // no map beside it: the bundle's own lines
    }
    maps.set(url, m);
  }
  const e = m?.map.findEntry(line, column);
  if (!m || !e || !('originalSource' in e) || !e.originalSource) return { url, line };
  return { url: path.resolve(m.dir, e.originalSource), line: e.originalLine };
}

/** One profile, or several added together (the worker threads of one process, each with its own file). */
export function summarize(files: string | string[], top = 25): { total: number; byArea: Share[]; byFunction: Share[] } {
  const area = new Map<string, number>();
  const fn = new Map<string, number>();
  let total = 0;
  for (const file of typeof files === 'string' ? [files] : files) {
    const p = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const self = new Map<number, number>();
    for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000);
    for (const [id, ms] of self) {
      const n = byId.get(id)!;
      const { functionName } = n.callFrame;
      const { url, line: lineNumber } = original(n.callFrame.url, n.callFrame.lineNumber, n.callFrame.columnNumber);
      total += ms;
      const a = areaOf(url, functionName);
      area.set(a, (area.get(a) ?? 0) + ms);
      const key = `${functionName || '(anonymous)'} ${url.replace(/^.*\/(node_modules|dist|src)\//, '$1/')}:${lineNumber + 1}`;
      fn.set(key, (fn.get(key) ?? 0) + ms);
    }
  }
  const list = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((x, y) => y[1] - x[1])
      .slice(0, top)
      .map(([name, ms]) => ({ name, ms, percent: (100 * ms) / total }));
  return { total, byArea: list(area), byFunction: list(fn) };
}
