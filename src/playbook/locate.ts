// Finding playbooks: NAME means playbooks/NAME.yaml in the installed package
// (found from this file's location, so it works from dist/ and from a global
// install); anything that looks like a path is a file.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { InputError } from '../common/errors.js';
import { PlaybookInvalidError } from './errors.js';
import { parsePlaybook } from './parse.js';
import { NAME_PATTERN } from './schema.js';
import { didYouMean } from './suggest.js';

/** The directory holding lifeboat's package.json. */
export function packageRoot(from: string = fileURLToPath(import.meta.url)): string {
  let dir = path.dirname(from);
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'lifeboat') return dir;
      } catch {
        // not ours; keep looking
      }
    }
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`cannot find lifeboat's package.json above ${from}`);
    dir = up;
  }
}

/** The shipped playbooks' directory. */
export function shippedPlaybooksDir(): string {
  return path.join(packageRoot(), 'playbooks');
}

/** NAME (a shipped playbook) or FILE → the file to read. */
export function locatePlaybook(target: string, dir: string = shippedPlaybooksDir()): string {
  const looksLikePath = target.includes('/') || target.includes(path.sep) || /\.ya?ml$/i.test(target);
  if (looksLikePath || existsSync(target)) return target;
  if (!NAME_PATTERN.test(target)) throw new InputError(`${JSON.stringify(target)} is neither a playbook name nor a file`);
  for (const ext of ['.yaml', '.yml']) {
    const file = path.join(dir, `${target}${ext}`);
    if (existsSync(file)) return file;
  }
  const names = shippedNames(dir);
  throw new InputError(`no shipped playbook ${target}${didYouMean(target, names)}; see 'lifeboat playbook list', or give a file path`);
}

function shippedNames(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((f) => /\.ya?ml$/.test(f))
      .map((f) => f.replace(/\.ya?ml$/, ''))
      .sort();
  } catch {
    return [];
  }
}

export interface PlaybookListing {
  name: string;
  description: string;
  file: string;
  /** the first problem, when the file does not parse */
  error?: string;
}

/** The shipped playbooks with their descriptions (structure checked, steps not). */
export function listPlaybooks(dir: string = shippedPlaybooksDir()): PlaybookListing[] {
  return shippedNames(dir).map((base) => {
    const file = ['.yaml', '.yml'].map((e) => path.join(dir, base + e)).find((f) => existsSync(f))!;
    try {
      const pb = parsePlaybook(readFileSync(file, 'utf8'), file);
      return { name: pb.name, description: pb.description, file };
    } catch (err) {
      const message = err instanceof PlaybookInvalidError ? err.lines()[0] : (err as Error).message;
      return { name: base, description: '', file, error: message };
    }
  });
}
