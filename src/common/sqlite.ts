// Every SQLite connection of ours is opened here, with better-sqlite3's addon
// named by its file. Left to find it, better-sqlite3 asks the `bindings` package,
// which reads a stack trace for the caller's package and tries a list of build
// directories with `require` (each miss a thrown error): a fresh member held
// about 0.4 MiB more for it (with the package's JS bundled into dist/member.cjs).
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import Database from 'better-sqlite3';

/** The addon's file, '' where it is not (looked up once). */
let addon: string | undefined;

/** Where `npm ci` builds the addon (or installs its prebuilt copy); undefined leaves the search to better-sqlite3. */
function addonFile(): string | undefined {
  addon ??= (() => {
    const file = path.join(path.dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json')), 'build', 'Release', 'better_sqlite3.node');
    return fs.existsSync(file) ? file : '';
  })();
  return addon || undefined;
}

/** `new Database(file, options)` with the addon's file given. */
export function openSqlite(file: string, options: Database.Options = {}): Database.Database {
  return new Database(file, { ...options, nativeBinding: addonFile() });
}
