// What a member is: the embedded Lifeboat member or real etcd. Detected from a
// live cluster (Status' version: `3.4.23-lifeboat` vs `3.4.23`) or from a data
// dir's layout (member/snap/db: etcd; member/meta + member/kv.db: Lifeboat), never
// from WAL or snap file names, which both share. An operator may force it; a
// forced runtime that contradicts what is detected is refused before anything
// changes (etcd run on a Lifeboat data dir renames the snap files it cannot decode
// and its WAL repair truncates the log).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { InputError, RefusedError } from '../common/errors.js';
import type { ConnectionOptions } from '../client/etcdClient.js';
import { etcdDataDirLock, isEtcdDataDir } from '../etcdfile/index.js';
import { NodeFileSystem } from '../storage/fileSystem.js';
import { kvPath, lockPath, metaPath } from '../storage/layout.js';
import { statusOf } from './memberOps.js';

export type RuntimeName = 'lifeboat' | 'etcd';
export type RuntimeChoice = RuntimeName | 'auto';
export const RUNTIME_CHOICES: readonly RuntimeChoice[] = ['auto', 'lifeboat', 'etcd'];

/** The etcd minor this toolkit is tested against; others work with a warning. */
export const TESTED_ETCD_MINOR = '3.4';

export function parseRuntimeChoice(s: string | undefined, what = '--runtime'): RuntimeChoice {
  const v = (s ?? 'auto').trim().toLowerCase();
  if ((RUNTIME_CHOICES as readonly string[]).includes(v)) return v as RuntimeChoice;
  throw new InputError(`${what} ${s}: expected one of ${RUNTIME_CHOICES.join(', ')}`);
}

/** A Lifeboat member reports etcd's version with `-lifeboat` appended. */
export function runtimeOfVersion(version: string): RuntimeName {
  return version.endsWith('-lifeboat') ? 'lifeboat' : 'etcd';
}

/** The runtime a data dir belongs to, by its layout; undefined when it holds neither (absent or empty). */
export function runtimeOfDataDir(dir: string): RuntimeName | undefined {
  const lifeboat = fs.existsSync(metaPath(dir)) || fs.existsSync(kvPath(dir));
  const etcd = isEtcdDataDir(dir);
  if (lifeboat && etcd)
    throw new InputError(`data dir ${dir} holds both an etcd backend (member/snap/db) and Lifeboat's member/meta or kv.db; inspect it by hand`);
  if (etcd) return 'etcd';
  if (lifeboat) return 'lifeboat';
  return undefined;
}

/**
 * The pid of the member running on a data dir, if one is: Lifeboat's from its
 * member/lock, etcd's from the locks it holds on its WAL (see /proc/locks).
 */
export function memberPid(dir: string): number | undefined {
  if (runtimeOfDataDir(dir) === 'etcd') return etcdDataDirLock(dir)?.pid;
  let text: string;
  try {
    text = fs.readFileSync(lockPath(dir), 'utf8');
  } catch {
    return undefined; // no lock: not running
  }
  // "<pid> <start>": a stale lock (a crash) names a process that is gone, or a pid reused since.
  const [pid, start] = text.trim().split(/\s+/);
  const ref = { pid: Number(pid), start: start ?? '' };
  return ref.pid > 0 && new NodeFileSystem().isRunning(ref) ? ref.pid : undefined;
}

/** The runtime of the members answering at endpoints, with the version they report. */
export async function clusterRuntime(endpoints: readonly string[], conn: ConnectionOptions): Promise<{ runtime: RuntimeName; version: string }> {
  let last: unknown;
  for (const ep of endpoints) {
    try {
      const s = await statusOf(ep, conn);
      return { runtime: runtimeOfVersion(s.version), version: s.version };
    } catch (e) {
      last = e;
    }
  }
  throw last instanceof Error ? last : new Error(`no endpoint answered: ${endpoints.join(', ')}`);
}

/**
 * The runtime to use: the forced one, checked against what was detected (a
 * mismatch is refused, naming both), or the detected one, or Lifeboat's.
 */
export function resolveRuntime(choice: RuntimeChoice, detected: RuntimeName | undefined, where: string): RuntimeName {
  if (choice === 'auto') return detected ?? 'lifeboat';
  if (detected && detected !== choice)
    throw new RefusedError(
      `runtime ${choice} was asked for, but ${where} is ${detected}: a ${choice} member cannot take part; use --runtime ${detected} (or runtime=${detected})`,
    );
  return choice;
}

/** The etcd binary to run: the one given, else `etcd` on PATH. */
export function etcdBinary(given?: string): string {
  if (given) {
    if (!fs.existsSync(given)) throw new InputError(`--etcd-bin ${given} does not exist; give the path of the etcd binary`);
    return given;
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const p = path.join(dir || '.', 'etcd');
    if (fs.existsSync(p)) return p;
  }
  throw new InputError('etcd is not on PATH: install it (Debian: apt-get install etcd-server) or pass --etcd-bin PATH');
}

export interface EtcdVersion {
  version: string;
  /** `3.4` */
  minor: string;
  /** a warning to show when this is not the tested minor */
  warning?: string;
}

/** `etcd --version` of a binary; 3.5 and 3.6 are driven the same way but untested here. */
export function etcdVersionOf(bin: string): EtcdVersion {
  const out = execFileSync(bin, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  const m = /etcd Version:\s*(\d+)\.(\d+)\.(\d+)/.exec(out);
  if (!m) throw new InputError(`${bin} --version printed no etcd version; is it etcd?`);
  const version = `${m[1]}.${m[2]}.${m[3]}`;
  const minor = `${m[1]}.${m[2]}`;
  if (minor === TESTED_ETCD_MINOR) return { version, minor };
  return {
    version,
    minor,
    warning: `etcd ${version} is untested with this toolkit (tested: ${TESTED_ETCD_MINOR}); on 3.5 and later a snapshot restore goes through etcdutl rather than etcdctl, and --bump-revision/--mark-compacted become available`,
  };
}

/** `etcdutl` where it exists (3.5+), else etcdctl (3.4), for `snapshot restore`. */
export function etcdRestoreTool(etcdBin: string): { bin: string; env: NodeJS.ProcessEnv } {
  const dir = path.dirname(etcdBin);
  for (const name of ['etcdutl', 'etcdctl']) {
    const p = path.join(dir, name);
    if (fs.existsSync(p)) return { bin: p, env: name === 'etcdctl' ? { ETCDCTL_API: '3' } : {} };
  }
  throw new InputError(`neither etcdutl nor etcdctl is beside ${etcdBin}: install them (Debian: apt-get install etcd-client)`);
}
