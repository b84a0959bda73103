// etcd's simple tokens (--auth-token simple, the default): "<16 random letters>.<raft
// index of the Authenticate entry>", assigned on every member when that entry is
// applied, kept in memory only (a restart forgets them: clients authenticate again),
// each valid for the TTL since its last use (etcd's --auth-token-ttl, 300 s).
// Dropped when auth is switched on or off, and a user's when the user is deleted or
// their password changes. Tokens are secrets: never logged.
import { randomInt } from 'node:crypto';
import { monotonicMs } from '../common/clock.js';

const LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
export const DEFAULT_TOKEN_TTL_SEC = 300;

/** etcd's genTokenPrefix: 16 random letters. */
export function tokenPrefix(): string {
  let s = '';
  for (let i = 0; i < 16; i++) s += LETTERS[randomInt(LETTERS.length)];
  return s;
}

/** The raft index a simple token names, or undefined when it is not one. */
export function tokenIndex(token: string): number | undefined {
  const parts = token.split('.');
  if (parts.length !== 2 || !/^\d+$/.test(parts[1])) return undefined;
  return Number(parts[1]);
}

export class SimpleTokens {
  private readonly tokens = new Map<string, { username: string; expires: number }>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = monotonicMs,
  ) {
    this.timer = setInterval(() => this.sweep(), Math.min(1000, Math.max(100, ttlMs / 4)));
    this.timer.unref();
  }

  assign(token: string, username: string): void {
    this.tokens.set(token, { username, expires: this.now() + this.ttlMs });
  }

  /** The token's user, its TTL restarted; undefined when unknown or expired. */
  use(token: string): string | undefined {
    const t = this.tokens.get(token);
    if (!t) return undefined;
    if (t.expires <= this.now()) {
      this.tokens.delete(token);
      return undefined;
    }
    t.expires = this.now() + this.ttlMs;
    return t.username;
  }

  invalidateUser(username: string): void {
    for (const [k, t] of this.tokens) if (t.username === username) this.tokens.delete(k);
  }

  clear(): void {
    this.tokens.clear();
  }

  stop(): void {
    clearInterval(this.timer);
    this.tokens.clear();
  }

  private sweep(): void {
    const now = this.now();
    for (const [k, t] of this.tokens) if (t.expires <= now) this.tokens.delete(k);
  }
}
