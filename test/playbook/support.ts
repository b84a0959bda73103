// Helpers for the playbook tests: temp dirs, playbook files, the CLI as a child process.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// This file runs as dist/test/playbook/support.js: the project root is three levels up.
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** The test entry point: `lifeboat` with the fake step types added (test/support/lifeboatWithSteps.ts). */
export const WITH_STEPS = fileURLToPath(new URL('../support/lifeboatWithSteps.js', import.meta.url));

export class TempDir {
  readonly dir = mkdtempSync(path.join(os.tmpdir(), 'lifeboat-playbook-'));
  path(...p: string[]): string {
    return path.join(this.dir, ...p);
  }
  write(name: string, text: string): string {
    const file = this.path(name);
    writeFileSync(file, text);
    return file;
  }
  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `lifeboat ARGS` without a terminal, with the fake steps, never touching ~/.local (XDG_STATE_HOME and HOME in `home`). */
export function lifeboat(home: string, args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 30_000): CliResult {
  return runCli(WITH_STEPS, home, args, env, timeoutMs);
}

/** The same through the release entry, bin/run.js: the built-in step types only. */
export function releaseLifeboat(home: string, args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 30_000): CliResult {
  return runCli('bin/run.js', home, args, env, timeoutMs);
}

function runCli(entry: string, home: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): CliResult {
  const r = spawnSync(process.execPath, [entry, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: {
      ...process.env,
      NO_COLOR: '1',
      LIFEBOAT_DEBUG: '',
      LIFEBOAT_FAULT: '',
      LIFEBOAT_AUDIT_DB: '',
      HOME: home,
      XDG_STATE_HOME: path.join(home, 'state'),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: timeoutMs,
  });
  if (r.error) throw r.error;
  // Killed by a signal: the code a shell shows (SIGKILL, as a failpoint dies: 137).
  return { code: r.status ?? (r.signal ? 128 + os.constants.signals[r.signal] : null), stdout: r.stdout, stderr: r.stderr };
}
