// `npm run build`, before the manifest: bundles @oclif/core into one file,
// dist/vendor/oclif-core.js, which commands import as '#oclif-core' (package.json
// "imports"; its types stay @oclif/core's). Node otherwise reads and compiles
// some 160 files of it (and of semver, minimatch, ...) at every command's start:
// a third of `lifeboat snapshot save`'s start-up, measured against etcdctl's.
import { renameSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const out = path.join(root, 'dist', 'vendor', 'oclif-core.js');

// The names we import; a missing one fails tsc (types) and this list is the runtime side.
const entry = `import * as core from '@oclif/core';
export const { Args, Command, Config, Errors, Flags, Parser, flush, run } = core;
`;

// oclif is CommonJS: give the bundle require (for the command files and plugins
// it loads by path) and the __dirname of the package it came from (it reads its
// own package.json there).
const banner = `import { createRequire as __createRequire } from 'node:module';
import { dirname as __pathDirname } from 'node:path';
const require = __createRequire(import.meta.url);
const __dirname = __pathDirname(require.resolve('@oclif/core'));
`;

await build({
  stdin: { contents: entry, resolveDir: root, sourcefile: 'oclif-core-entry.js' },
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  // Loaded only for TypeScript sources at development time, never here.
  external: ['typescript', 'ts-node'],
  banner: { js: banner },
  outfile: `${out}.tmp`,
  logLevel: 'warning',
});
// Renamed into place: a failed build never leaves a half-written bundle behind.
renameSync(`${out}.tmp`, out);
console.log(`wrote ${path.relative(process.cwd(), out) || out}`);
