// The member's side of etcd's Auth API and of who a call comes from (etcd v3.4's
// v3_server.go and auth/store.go): users and roles are changed through Raft (the
// root role is checked at apply, against the user the entry carries); reads of them
// are linearizable and served here. Authenticate checks the password (bcrypt, in a
// worker) before proposing, so its entry carries only the user's name and the new
// token's prefix; passwords of new users and changed passwords are hashed before
// proposing. Simple tokens live in memory (authTokens.ts). No password or token is
// ever logged or put in an error. A client's deadline (grpc-timeout) bounds the
// reads and proposals of every call: nothing is proposed past it.
import {
  AuthState,
  ErrAuthFailed,
  ErrAuthNotEnabled,
  ErrInvalidAuthToken,
  ErrNoPasswordUser,
  ErrRoleNotFound,
  ErrUserNotFound,
  type AuthApplyResult,
  type AuthInfo,
  type AuthRequest,
  type KvStore,
  type Permission,
} from '../kv/index.js';
import type { AuthBackend } from '../api/authService.js';
import type { Caller } from '../api/caller.js';
import type { Header } from '../api/services.js';
import type { ApplyOutcome } from './apply.js';
import { linearizable } from './proposals.js';
import type { Logger } from './logger.js';
import { Passwords } from './passwords.js';
import { SimpleTokens, tokenIndex, tokenPrefix } from './authTokens.js';

export interface AuthApiHost {
  readonly log: Logger;
  header(revision: number): Header;
  currentRevision(): number;
  isLearner(): boolean;
  kv(): KvStore;
  /** Resolves once this member has applied up to the leader's commit index at the call (unless the client's `deadline` passes first). */
  readIndex(deadline?: number): Promise<void>;
  /** Proposes an auth request on behalf of `who` unless the client's `deadline` passed; resolves once applied. */
  proposeAuth(req: AuthRequest, who: AuthInfo | undefined, deadline?: number): Promise<ApplyOutcome>;
  readonly requestTimeoutMs: number;
}

/** Authenticate retries while the auth store changed between the password check and the apply (etcd). */
const AUTHENTICATE_ATTEMPTS = 5;

export class AuthApi implements AuthBackend {
  readonly tokens: SimpleTokens;
  private readonly passwords = new Passwords();

  constructor(
    private readonly host: AuthApiHost,
    tokenTtlSec: number,
  ) {
    this.tokens = new SimpleTokens(tokenTtlSec * 1000);
  }

  header(revision: number): Header {
    return this.host.header(revision);
  }

  currentRevision(): number {
    return this.host.currentRevision();
  }

  isLearner(): boolean {
    return this.host.isLearner();
  }

  stop(): void {
    this.tokens.stop();
    this.passwords.close();
  }

  private state(): AuthState {
    return new AuthState(this.host.kv().cluster);
  }

  /** Applied auth changes, on every member: tokens made, users' tokens dropped, all dropped. */
  afterAuth(r: AuthApplyResult): void {
    if (r.token) this.tokens.assign(r.token.token, r.token.username);
    if (r.invalidateUser !== undefined) this.tokens.invalidateUser(r.invalidateUser);
    if (r.switched) this.tokens.clear();
  }

  // ---- who calls ---------------------------------------------------------------

  /** etcd's AuthInfoFromCtx: a token names its user (at the current auth revision); else a certificate's CN. */
  async authInfo(c: Caller): Promise<AuthInfo | undefined> {
    if (c.token !== undefined) {
      let user = this.tokens.use(c.token);
      const index = tokenIndex(c.token);
      // A token made by an entry this member has not applied yet (etcd's indexWaiter).
      if (user === undefined && index !== undefined && index > this.host.kv().appliedIndex()) {
        await this.waitApplied(index);
        user = this.tokens.use(c.token);
      }
      if (user === undefined) throw ErrInvalidAuthToken;
      return { username: user, revision: this.state().revision() };
    }
    if (c.commonName) return { username: c.commonName, revision: this.state().revision() };
    return undefined;
  }

  /** The same without waiting for an entry to apply (watch creates, answered in order). */
  authInfoNow(c: Caller): AuthInfo | undefined {
    if (c.token !== undefined) {
      const user = this.tokens.use(c.token);
      if (user === undefined) throw ErrInvalidAuthToken;
      return { username: user, revision: this.state().revision() };
    }
    if (c.commonName) return { username: c.commonName, revision: this.state().revision() };
    return undefined;
  }

  requireAdmin(ai: AuthInfo | undefined): void {
    const err = this.state().adminPermitted(ai);
    if (err) throw err;
  }

  /** Throws unless `ai` may read [key, rangeEnd). */
  requireRead(ai: AuthInfo | undefined, key: Uint8Array, rangeEnd: Uint8Array | undefined): void {
    const err = this.state().opPermitted(ai, key, rangeEnd, false);
    if (err) throw err;
  }

  /** The refusal of a watch on [key, rangeEnd), or undefined (etcd's isWatchPermitted). */
  watchRefusal(c: Caller, key: Uint8Array, rangeEnd: Uint8Array): Error | undefined {
    try {
      return this.state().opPermitted(this.authInfoNow(c), key, rangeEnd, false);
    } catch (e) {
      return e as Error;
    }
  }

  private async waitApplied(index: number): Promise<void> {
    const deadline = Date.now() + this.host.requestTimeoutMs;
    while (this.host.kv().appliedIndex() < index && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  }

  private async propose(req: AuthRequest, ai: AuthInfo | undefined, deadline: number | undefined): Promise<ApplyOutcome> {
    const out = await this.host.proposeAuth(req, ai ?? { username: '', revision: 0 }, deadline);
    if (out.error) throw out.error;
    return out;
  }

  // ---- the Auth RPCs -------------------------------------------------------------

  async authenticate(name: string, password: string, deadline?: number): Promise<string> {
    await linearizable(this.host, deadline);
    for (let attempt = 1; ; attempt++) {
      const s = this.state();
      if (!s.enabled()) throw ErrAuthNotEnabled;
      const u = s.user(name);
      if (!u) throw ErrAuthFailed;
      if (u.noPassword) throw ErrNoPasswordUser;
      const checked = s.revision();
      if (!(await this.passwords.matches(password, u.password.toString('utf8')))) {
        this.host.log.info({ user: name }, 'invalid password');
        throw ErrAuthFailed;
      }
      const out = await this.propose({ authenticate: { name, simpleToken: tokenPrefix() } }, undefined, deadline);
      if (checked === this.state().revision() || attempt >= AUTHENTICATE_ATTEMPTS) return out.token ?? '';
      // The user may have changed (password, deleted) between the check and the apply.
    }
  }

  async authEnable(ai: AuthInfo | undefined, deadline?: number): Promise<void> {
    await this.propose({ authEnable: {} }, ai, deadline);
  }

  async authDisable(ai: AuthInfo | undefined, deadline?: number): Promise<void> {
    await this.propose({ authDisable: {} }, ai, deadline);
  }

  async userAdd(ai: AuthInfo | undefined, name: string, password: string, noPassword: boolean, deadline?: number): Promise<void> {
    const hashedPassword = noPassword ? '' : await this.passwords.hash(password);
    await this.propose({ userAdd: { name, hashedPassword, noPassword } }, ai, deadline);
  }

  async userChangePassword(ai: AuthInfo | undefined, name: string, password: string, deadline?: number): Promise<void> {
    const hashedPassword = await this.passwords.hash(password);
    await this.propose({ userChangePassword: { name, hashedPassword } }, ai, deadline);
  }

  async userDelete(ai: AuthInfo | undefined, name: string, deadline?: number): Promise<void> {
    await this.propose({ userDelete: { name } }, ai, deadline);
  }

  async userGrantRole(ai: AuthInfo | undefined, user: string, role: string, deadline?: number): Promise<void> {
    await this.propose({ userGrantRole: { user, role } }, ai, deadline);
  }

  async userRevokeRole(ai: AuthInfo | undefined, name: string, role: string, deadline?: number): Promise<void> {
    await this.propose({ userRevokeRole: { name, role } }, ai, deadline);
  }

  async roleAdd(ai: AuthInfo | undefined, name: string, deadline?: number): Promise<void> {
    await this.propose({ roleAdd: { name } }, ai, deadline);
  }

  async roleDelete(ai: AuthInfo | undefined, role: string, deadline?: number): Promise<void> {
    await this.propose({ roleDelete: { role } }, ai, deadline);
  }

  async roleGrantPermission(ai: AuthInfo | undefined, name: string, perm: Permission, deadline?: number): Promise<void> {
    await this.propose({ roleGrantPermission: { name, perm } }, ai, deadline);
  }

  async roleRevokePermission(ai: AuthInfo | undefined, role: string, key: Buffer, rangeEnd: Buffer, deadline?: number): Promise<void> {
    await this.propose({ roleRevokePermission: { role, key, rangeEnd } }, ai, deadline);
  }

  /** A user's roles: for the root role, or for the user asking about itself (etcd). Never its password. */
  async userGet(ai: AuthInfo | undefined, name: string, deadline?: number): Promise<string[]> {
    await linearizable(this.host, deadline);
    const s = this.state();
    const refused = s.adminPermitted(ai);
    if (refused && name !== ai?.username) throw refused;
    const u = s.user(name);
    if (!u) throw ErrUserNotFound;
    return u.roles;
  }

  /** A role's permissions: for the root role, or for a user holding the role (etcd). */
  async roleGet(ai: AuthInfo | undefined, role: string, deadline?: number): Promise<Permission[]> {
    await linearizable(this.host, deadline);
    const s = this.state();
    const refused = s.adminPermitted(ai);
    if (refused && !(ai && s.hasRole(ai.username, role))) throw refused;
    const r = s.role(role);
    if (!r) throw ErrRoleNotFound;
    return r.perms;
  }

  async userList(ai: AuthInfo | undefined, deadline?: number): Promise<string[]> {
    await linearizable(this.host, deadline);
    const s = this.state();
    this.requireAdmin(ai);
    return s.userNames();
  }

  async roleList(ai: AuthInfo | undefined, deadline?: number): Promise<string[]> {
    await linearizable(this.host, deadline);
    const s = this.state();
    this.requireAdmin(ai);
    return s.roleNames();
  }
}
