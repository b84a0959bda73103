// `npm run build`, before the manifest: bundles the large CommonJS packages every
// command loads into one file each under dist/vendor/, imported as '#oclif-core',
// '#grpc-js' and '#protobufjs' (package.json "imports"; their types stay the
// packages' own). Node otherwise reads and compiles some 300 files of them (and of
// semver, minimatch, ...) at every start: half of `lifeboat snapshot save`'s
// start-up, which is measured against etcdctl's.
import { renameSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const require = createRequire(import.meta.url);

/** file in dist/vendor → the package bundled into it */
const BUNDLES: Record<string, string> = {
  'oclif-core.js': '@oclif/core',
  'grpc-js.js': '@grpc/grpc-js',
  'protobufjs.js': 'protobufjs',
};

for (const [file, pkg] of Object.entries(BUNDLES)) {
  // Every export of the package, by name (and its module.exports as the default,
  // as Node gives a CommonJS package to `import x from`).
  const names = Object.keys(require(pkg) as object).filter((n) => /^[A-Za-z_$][\w$]*$/.test(n) && n !== 'default');
  const entry = `import * as ns from '${pkg}';\nexport default ns.default;\nexport const { ${names.join(', ')} } = ns;\n`;
  // The bundle needs require (for what the package loads by path) and
  // __dirname of the package it came from (@oclif/core reads its own package.json).
  const banner = [
    "import { createRequire as __vendorRequire } from 'node:module';",
    "import { dirname as __vendorDirname } from 'node:path';",
    'const require = __vendorRequire(import.meta.url);',
    `const __dirname = __vendorDirname(require.resolve('${pkg}'));`,
  ].join('\n');
  const out = path.join(root, 'dist', 'vendor', file);
  await build({
    stdin: { contents: entry, resolveDir: root, sourcefile: `${file}-entry.js` },
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    // typescript and ts-node: loaded by oclif only for TypeScript sources, never
    // here; proto-loader: only for grpc-js's channelz, which we do not serve.
    external: ['typescript', 'ts-node', '@grpc/proto-loader'],
    banner: { js: banner },
    outfile: `${out}.tmp`,
    logLevel: 'error',
  });
  // Renamed into place: a failed build never leaves a half-written bundle behind.
  renameSync(`${out}.tmp`, out);
}
console.log(`wrote dist/vendor/ (${Object.keys(BUNDLES).join(', ')})`);
