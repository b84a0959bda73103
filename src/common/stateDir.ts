// Lifeboat's own state directory on this host: the audit database and migration progress files live in it.
import { homedir } from 'node:os';
import path from 'node:path';

/** $XDG_STATE_HOME/lifeboat (XDG_STATE_HOME only when absolute), else ~/.local/state/lifeboat. */
export function lifeboatStateDir(env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
  const xdg = env.XDG_STATE_HOME;
  const stateHome = xdg !== undefined && path.isAbsolute(xdg) ? xdg : path.join(home, '.local', 'state');
  return path.join(stateHome, 'lifeboat');
}
