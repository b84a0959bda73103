// Where the audit database lives.
import { homedir } from 'node:os';
import path from 'node:path';
import { lifeboatStateDir } from '../common/stateDir.js';

export const AUDIT_DB_ENV = 'LIFEBOAT_AUDIT_DB';

/**
 * The audit database's absolute path: `flag` (from --audit-db) if given, else
 * $LIFEBOAT_AUDIT_DB, else $XDG_STATE_HOME/lifeboat/audit.db (XDG_STATE_HOME
 * counts only when absolute, as the XDG spec says), else
 * ~/.local/state/lifeboat/audit.db. Relative paths resolve against the working
 * directory, so every message names the file unambiguously.
 */
export function resolveAuditDbPath(flag?: string, env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
  if (flag !== undefined && flag !== '') return path.resolve(flag);
  const fromEnv = env[AUDIT_DB_ENV];
  if (fromEnv !== undefined && fromEnv !== '') return path.resolve(fromEnv);
  return path.join(lifeboatStateDir(env, home), 'audit.db');
}
