// Loads one of dist/vendor/'s CommonJS bundles (scripts/build/bundleVendor.ts writes
// them) with V8's code cache for it, written beside it at build. Compiling the
// three bundles (1.5 MB of source) was about 20 ms of every command's start-up,
// `lifeboat snapshot save`'s included; from the cache, V8 takes the compiled
// code as it was. A cache that is missing, damaged (its SHA-256 is checked: V8
// does not check its own in release builds) or made by another V8 or other flags
// is ignored, and the bundle compiles as it would without one.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';

const DIGEST_BYTES = 32;

/** Where the code cache of `bundle` lives. */
export const codeCacheFile = (bundle: string) => bundle.replace(/\.cjs$/, '.code-cache');

function readCache(file: string): Buffer | undefined {
  let raw: Buffer;
  try {
    raw = fs.readFileSync(file);
  } catch {
    return undefined;
  }
  const data = raw.subarray(DIGEST_BYTES);
  return raw.length > DIGEST_BYTES && createHash('sha256').update(data).digest().equals(raw.subarray(0, DIGEST_BYTES)) ? data : undefined;
}

/**
 * What a bundle calls in place of import() (bundleVendor.ts rewrites it so): code
 * compiled by vm.Script has no import() of its own, and Node's way to give it one
 * is experimental (a warning on every start) and fails with a code cache.
 */
export const VENDOR_IMPORT = '__vendorImport';

/**
 * Runs the CommonJS `bundle` (a file path) and returns its module.exports. `pkg`
 * is the package bundled: its folder is the bundle's __dirname (a package may read
 * files beside itself); `importer` is import() of the module that asks (the
 * bundle's ES module wrapper). With `writeCache`, the code cache is written afterwards
 * (to a temporary path, then renamed), for the build.
 */
export function loadVendorBundle(bundle: string, pkg: string, importer: (specifier: string) => Promise<unknown>, writeCache = false): unknown {
  const source = fs.readFileSync(bundle, 'utf8');
  const cacheFile = codeCacheFile(bundle);
  const cachedData = writeCache ? undefined : readCache(cacheFile);
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname, ${VENDOR_IMPORT}) {${source}\n})`, {
    filename: bundle,
    cachedData,
  });
  const require = createRequire(bundle);
  const module = { exports: {} as unknown };
  (script.runInThisContext() as (...args: unknown[]) => void)(module.exports, require, module, bundle, path.dirname(require.resolve(pkg)), importer);
  if (writeCache) {
    const data = script.createCachedData();
    fs.writeFileSync(`${cacheFile}.tmp`, Buffer.concat([createHash('sha256').update(data).digest(), data]));
    fs.renameSync(`${cacheFile}.tmp`, cacheFile);
  }
  return module.exports;
}
