// `npm run build`, after tsc: bundles each command bin/run.js starts without oclif
// into one CommonJS file: `lifeboat server` (serverEntry.ts and every module it
// imports) into dist/member.cjs, `snapshot save` and `snapshot restore` into
// dist/snapshot-save.cjs and dist/snapshot-restore.cjs, the everyday commands
// (everydayRun.ts) into dist/everyday.cjs, `backup run` (backupRunMain.ts) into
// dist/backup-run.cjs, and the process-title
// masking every command runs first into dist/process-title.cjs (bin/run.js is a
// CommonJS script, so a lean command loads no ES module at all). A member started from
// some 110 ES modules held about 3 MiB more two seconds after start, and 1.5 MiB
// more once settled, than the same code loaded as one CommonJS script: Node's
// ES-module loader (its module jobs, URLs and resolution, and the built-in modules
// it loads) and the start-up garbage they leave in the young generation; a
// `snapshot save` loaded its 32 modules in about half the time. better-sqlite3's
// JS is bundled too (its addon is named by file, common/sqlite.ts, so `bindings`
// stays outside and unloaded); @node-rs/crc32 stays outside, and so do the prompts, which a
// command imports only when it asks for a password; the worker threads' entries
// (readWorker.js, passwordWorker.js) stay the ES modules tsc wrote. The release
// bundles are built without failpoints; dist/test/member-faults.cjs, the member
// the fault tests start, with them.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Each module bin/run.js requires as a bundle of its own (dist/<out>.cjs): the lean commands, and the process-title masking every command runs first. */
const ENTRIES = [
  { in: 'src/cli/serverEntry.js', out: 'member' },
  { in: 'src/cli/snapshotSaveRun.js', out: 'snapshot-save' },
  { in: 'src/cli/snapshotRestoreRun.js', out: 'snapshot-restore' },
  { in: 'src/cli/processTitle.js', out: 'process-title' },
  // The everyday commands (version, get, put, ...): grpc-js is loaded at run time
  // from its vendor bundle and V8 code cache (dist/vendor/grpc-js.js, the one vendor
  // module let in), and only by the commands that connect.
  { in: 'src/cli/everydayRun.js', out: 'everyday', vendor: ['dist/vendor/grpc-js.js'] },
  // `backup run`, the long-running agent: the S3 SDK stays outside (external), required
  // only when the store is s3://.
  { in: 'src/cli/backupRunMain.js', out: 'backup-run', vendor: ['dist/vendor/grpc-js.js'] },
];

/** What a bundled module's `import.meta.url` becomes: its own file's URL, found from the bundle's place (dist/ may move). */
const BUNDLE_URL = '__bundleUrl';

/**
 * esbuild leaves `import.meta` empty in CommonJS output; our modules use its url to
 * find files beside them (the proto descriptor, the worker threads' entries).
 */
const importMetaUrl = (bundleDir: string): Plugin => ({
  name: 'import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.js$/ }, async (args) => {
      // Every module is read here once (returning nothing would have esbuild read it again).
      const source = await readFile(args.path, 'utf8');
      const rel = path.relative(bundleDir, args.path).split(path.sep).join('/');
      return { contents: source.replaceAll('import.meta.url', `new URL(${JSON.stringify(rel)}, ${BUNDLE_URL}).href`), loader: 'js' };
    });
  },
});

/**
 * The test bundle of `lifeboat server`: the same member with its failpoints and
 * planted bugs (src/common/failpoint.ts), which the release bundles are built
 * without. Only tests run it (test/support/lifeboatWithFaults.ts); it lives under
 * dist/test/, with them.
 */
const TEST_ENTRIES = [{ in: 'src/cli/serverEntry.js', out: 'test/member-faults' }];

/** Bundles `entries` into dist/, failpoints built in or left out (esbuild drops every call site guarded by __LIFEBOAT_FAULTS__). */
async function bundle(entries: ReadonlyArray<{ in: string; out: string; vendor?: readonly string[] }>, faults: boolean): Promise<void> {
  // Every entry of one build in one directory: import.meta.url is found from it.
  const bundleDir = path.dirname(path.join(dist, entries[0].out));
  if (entries.some((e) => path.dirname(path.join(dist, e.out)) !== bundleDir)) throw new Error('bundleEntries: one directory per build');
  // One build for all the entries: each module is read once, and each entry still
  // gets a whole bundle of its own (no code splitting in CommonJS output).
  const result = await build({
    entryPoints: entries.map((e) => ({ in: path.join(dist, e.in), out: e.out })),
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external: ['bindings', '@node-rs/crc32', '@inquirer/*', '@aws-sdk/*'],
    define: { __LIFEBOAT_FAULTS__: String(faults) },
    // Folds the constant: `if (false) …` and `false && …` go, with the names in them.
    minifySyntax: true,
    // "use strict" first: the banner would otherwise push esbuild's below it, and
    // the modules (ES modules until now) would run in sloppy mode.
    banner: { js: `'use strict';\nconst ${BUNDLE_URL} = require('node:url').pathToFileURL(__filename);` },
    legalComments: 'none',
    sourcemap: 'linked',
    plugins: [importMetaUrl(bundleDir)],
    outdir: dist,
    outExtension: { '.js': '.cjs' },
    write: false,
    logLevel: 'silent',
    metafile: true,
  });
  // A warning (an `import.meta` left empty, a require that cannot be resolved) would
  // be a command that fails at run time; the vendor bundles (grpc-js, oclif) have no
  // place in a lean entry (the start-up and memory they cost is why it has its own).
  const problems = [
    ...result.warnings.map((w) => w.text),
    ...Object.entries(result.metafile.outputs).flatMap(([out, o]) => {
      const allowed = entries.find((e) => path.resolve(out) === path.join(dist, `${e.out}.cjs`))?.vendor ?? [];
      return Object.keys(o.inputs)
        .filter((f) => f.includes('dist/vendor/') && !allowed.some((a) => f.endsWith(a)))
        .map((f) => `${f} is not for a lean entry`);
    }),
  ];
  if (problems.length > 0) throw new Error(`bundleEntries: ${problems.join('; ')}`);
  // Each file written to a temporary path and renamed: a failed build never leaves a half-written bundle.
  for (const file of result.outputFiles) {
    mkdirSync(path.dirname(file.path), { recursive: true });
    writeFileSync(`${file.path}.tmp`, file.contents);
    renameSync(`${file.path}.tmp`, file.path);
  }
  for (const [file, output] of Object.entries(result.metafile.outputs)) {
    if (file.endsWith('.cjs')) console.log(`wrote ${path.relative(path.dirname(dist), path.resolve(file))} (${Object.keys(output.inputs).length} modules)`);
  }
}

await bundle(ENTRIES, false);
await bundle(TEST_ENTRIES, true);
