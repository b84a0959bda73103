// External tools the tests drive. A missing one fails the test at once with one
// line naming the Debian package; nothing is ever skipped. Also: running the
// lifeboat CLI and etcdctl as child processes, and bounded waiting.
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGES: Record<string, string> = {
  etcdctl: 'etcd-client',
  etcd: 'etcd-server',
  openssl: 'openssl',
  tmux: 'tmux',
  script: 'bsdutils',
  chromium: 'chromium',
  'discovery.etcd.io': 'etcd-discovery',
  tinyproxy: 'tinyproxy',
  dnsmasq: 'dnsmasq',
};

export function requireTool(name: keyof typeof PACKAGES): string {
  try {
    return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(`${name} is required by this test: apt-get install -y ${PACKAGES[name]}`);
  }
}

/** The project root: this file runs as dist/test/support/tools.js. */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export const ETCD_TOOLS_MESSAGE = 'etcd-server and etcd-client are required for interop tests: apt-get install -y etcd-server etcd-client';

/** The executable's path on PATH, or undefined. */
export function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Throws (one line, no stack) unless both `etcd` and `etcdctl` are on PATH. Never skip instead. */
export function requireEtcdTools(): void {
  if (onPath('etcd') && onPath('etcdctl')) return;
  const err = new Error(ETCD_TOOLS_MESSAGE);
  err.stack = `Error: ${ETCD_TOOLS_MESSAGE}`;
  throw err;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Run a program to completion (killed after `timeoutMs`), collecting its output. */
export function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number; input?: string; cwd?: string } = {}): Promise<RunResult> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd ?? ROOT, env: opts.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - t0 });
    });
    // A child that exits without reading its stdin (openssl, say) must not fail the test with EPIPE.
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}

/** `lifeboat ARGS` as a user runs it: node bin/run.js from the project root, no TTY. */
export function lifeboat(...args: string[]): Promise<RunResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', LIFEBOAT_DEBUG: '' };
  for (const k of Object.keys(env)) if (k.startsWith('LIFEBOAT_') && k !== 'LIFEBOAT_DEBUG') delete env[k];
  return run(process.execPath, [path.join(ROOT, 'bin', 'run.js'), ...args], { env });
}

/** Real etcdctl (v3 API). */
export function etcdctl(...args: string[]): Promise<RunResult> {
  return run('etcdctl', args, { env: { ...process.env, ETCDCTL_API: '3' } });
}

/** Retry `fn` until it returns a value other than undefined/false (or stops throwing), within `timeoutMs`. */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, opts: { timeoutMs?: number; intervalMs?: number } = {}): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
      last = undefined;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${opts.timeoutMs ?? 30_000}ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 250));
  }
}

/** Exit 0; returns stdout. */
export function expectOk(r: RunResult): string {
  assert.equal(r.code, 0, `exit ${r.code}; stderr: ${r.stderr}`);
  return r.stdout;
}

const ID_FIELDS = /"(?:ID|cluster_id|member_id|leader|memberID|lease|from|to)":/;

/**
 * Parses `-w json` as etcdctl writes it (and Lifeboat, which must write it the
 * same): every ID field must be a JSON number (a uint64, above 2^53 for most IDs),
 * and it is read from its exact decimal text, never through a JS number, then
 * given back as lowercase hex for comparing with the text output.
 */
export function parseJsonIds(text: string): any {
  const quoted = new RegExp(`${ID_FIELDS.source}"`, 'g');
  assert.doesNotMatch(text, quoted, `an ID written as a string, not as etcdctl's number: ${text}`);
  const numbers = new RegExp(`(${ID_FIELDS.source})(\\d+)(?=[,}])`, 'g');
  return JSON.parse(text.replace(numbers, (_m, field: string, digits: string) => `${field}"${BigInt(digits).toString(16)}"`));
}

/** Failed with `code`, exactly one line on stderr mentioning every `mentions`, no stack trace. */
export function failsWithOneLine(r: RunResult, code: number, ...mentions: string[]): string {
  assert.equal(r.code, code, `exit code; stdout: ${r.stdout} stderr: ${r.stderr}`);
  assert.match(r.stderr, /^[^\n]+\n$/, `stderr should be one line: ${JSON.stringify(r.stderr)}`);
  for (const m of mentions) assert.ok(r.stderr.includes(m), `stderr should mention ${JSON.stringify(m)}: ${r.stderr}`);
  assert.doesNotMatch(r.stderr, /\bat .+:\d+:\d+/, 'no stack trace');
  return r.stderr;
}

/** Stops a child: SIGTERM, then SIGKILL after 10 s; resolves once it has exited. */
export async function stopProcess(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const kill = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    proc.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    proc.kill('SIGTERM');
  });
}
