// `npm run build`, before the manifest: bundles the large CommonJS packages every
// command loads into one file each under dist/vendor/, imported as '#oclif-core'
// and '#grpc-js' (package.json "imports"; their types stay the
// packages' own). Node otherwise reads and compiles some 300 files of them (and of
// semver, minimatch, ...) at every start: half of `lifeboat snapshot save`'s
// start-up, which is measured against etcdctl's. Each bundle is CommonJS, loaded
// by a small ES module with V8's code cache (src/common/vendorBundle.ts).
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { loadVendorBundle, VENDOR_IMPORT } from '../../src/common/vendorBundle.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const require = createRequire(import.meta.url);

/** file in dist/vendor → the package bundled into it */
const BUNDLES: Record<string, string> = {
  'oclif-core.js': '@oclif/core',
  'grpc-js.js': '@grpc/grpc-js',
};

for (const [file, pkg] of Object.entries(BUNDLES)) {
  // Every export of the package, by name (and its module.exports as the default,
  // as Node gives a CommonJS package to `import x from`).
  const names = Object.keys(require(pkg) as object).filter((n) => /^[A-Za-z_$][\w$]*$/.test(n) && n !== 'default');
  const out = path.join(root, 'dist', 'vendor', file);
  const bundle = out.replace(/\.js$/, '.cjs');
  await build({
    stdin: { contents: `module.exports = require('${pkg}');\n`, resolveDir: root, sourcefile: `${file}-entry.js` },
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    // typescript and ts-node: loaded by oclif only for TypeScript sources, never
    // here; proto-loader: only for grpc-js's channelz, which we do not serve.
    external: ['typescript', 'ts-node', '@grpc/proto-loader'],
    outfile: `${bundle}.tmp`,
    logLevel: 'error',
  });
  // import() calls the wrapper's importer instead (vendorBundle.ts says why); a method named import, or "import()" in a string, is left alone.
  const code = readFileSync(`${bundle}.tmp`, 'utf8').replace(/(?<![.\w$])import\((?!\))/g, `${VENDOR_IMPORT}(`);
  writeFileSync(`${bundle}.tmp`, code);
  // Renamed into place: a failed build never leaves a half-written bundle behind.
  renameSync(`${bundle}.tmp`, bundle);
  // Run once here to write its code cache (vendorBundle.ts), which every later start reads.
  loadVendorBundle(bundle, pkg, (s) => import(s), true);
  // The module imported as '#…': the bundle's exports, by name, loaded with that cache.
  const shim = [
    "import { fileURLToPath } from 'node:url';",
    "import { loadVendorBundle } from '../src/common/vendorBundle.js';",
    `const m = loadVendorBundle(fileURLToPath(new URL('./${path.basename(bundle)}', import.meta.url)), '${pkg}', (s) => import(s));`,
    'export default m;',
    `export const { ${names.join(', ')} } = m;`,
    '',
  ].join('\n');
  writeFileSync(`${out}.tmp`, shim);
  renameSync(`${out}.tmp`, out);
}
console.log(`wrote dist/vendor/ (${Object.keys(BUNDLES).join(', ')})`);
