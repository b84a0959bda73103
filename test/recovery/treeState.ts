// "Nothing was written": every file and directory under a root, with its name,
// type, size, modification time (nanoseconds) and, for files, a sha256 of the
// contents. Two states compare equal only if not a byte and not an mtime changed,
// and no file appeared or went away.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { run, type RunResult } from '../support/tools.js';

export type TreeState = Record<string, string>;

export function treeState(root: string): TreeState {
  const out: TreeState = {};
  const stack = [''];
  // Bounded: each directory is visited once (no symlinks are followed).
  while (stack.length > 0) {
    const rel = stack.pop()!;
    const abs = path.join(root, rel);
    const st = fs.lstatSync(abs, { bigint: true });
    if (st.isDirectory()) {
      out[rel || '.'] = `dir mtime ${st.mtimeNs}`;
      for (const name of fs.readdirSync(abs)) stack.push(path.join(rel, name));
    } else {
      const sha = st.isFile() ? createHash('sha256').update(fs.readFileSync(abs)).digest('hex') : 'not a file';
      out[rel] = `size ${st.size} mtime ${st.mtimeNs} sha256 ${sha}`;
    }
  }
  return out;
}

/** The project's CLI inside a private mount namespace in which `dir` is a read-only bind mount (any write there fails with EROFS). */
export function lifeboatOnReadOnlyMount(dir: string, ...args: string[]): Promise<RunResult> {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const script = `mount --bind ${q(dir)} ${q(dir)} && mount -o remount,bind,ro ${q(dir)} && exec ${q(process.execPath)} bin/run.js ${args.map(q).join(' ')}`;
  return run('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script], { env: { ...process.env, NO_COLOR: '1' } });
}
