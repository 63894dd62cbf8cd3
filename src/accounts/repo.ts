import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import { ApiError } from '../errors.js';
import { hashSecret, newId, randomToken } from '../ids.js';
import type { Store } from '../store/db.js';
import { Index, Table } from '../store/table.js';
import { RefIndex } from '../store/scoped-table.js';
import { allScopes, ACTIONS, SCOPE_NAMES, type Scopes } from '../auth/scopes.js';
import { hashPassword } from '../auth/password.js';
import type { ApiKeyRecord, MembershipRecord, RoleRecord, SessionRecord, TeamRecord, UserRecord } from './records.js';

/** Every team and user lives under this one scope; they are looked up by id. */
export const GLOBAL = '*';
export const API_KEY_PREFIX = 'slk_';
export const SESSION_PREFIX = 'sls_';
export const SESSION_TTL_MS = 30 * 24 * 3600 * 1000;
/** Lifetime of the session handed out with an invitation, used to set a first password. */
export const INVITE_SESSION_TTL_MS = 7 * 24 * 3600 * 1000;
/** last_used_at is written at most this often per key (spec: accurate to five minutes). */
export const LAST_USED_RESOLUTION_MS = 5 * 60 * 1000;

/** Scopes of the built-in `member` role: everything but managing billing, users, roles and keys. */
export function memberScopes(): Scopes {
  const out: Scopes = {};
  for (const name of SCOPE_NAMES) {
    out[name] = name === 'billing' || name === 'users' || name === 'roles' ? ['read'] : [...ACTIONS];
  }
  return out;
}

/** Storage of teams, users, memberships, roles, API keys and sessions. */
export class AccountsRepo {
  readonly teams: Table<TeamRecord>;
  readonly users: Table<UserRecord>;
  readonly userByEmail: Index;
  /** scope team id, id user id */
  readonly memberships: Table<MembershipRecord>;
  /** scope user id, id team id: the teams of a user */
  readonly userTeams: Table<{ id: string; created_at: string }>;
  readonly roles: Table<RoleRecord>;
  readonly keys: Table<ApiKeyRecord>;
  /** secret hash → `teamId/keyId` */
  readonly keyBySecret: RefIndex;
  readonly sessions: Table<SessionRecord>;
  /** token hash → `userId/sessionId` */
  readonly sessionByToken: RefIndex;

  constructor(
    readonly store: Store,
    readonly clock: Clock,
  ) {
    this.teams = new Table(store, 'teams');
    this.users = new Table(store, 'users');
    this.userByEmail = new Index(store, 'users_by_email');
    this.memberships = new Table(store, 'memberships');
    this.userTeams = new Table(store, 'user_teams');
    this.roles = new Table(store, 'roles');
    this.keys = new Table(store, 'api_keys');
    this.keyBySecret = new RefIndex(store, 'api_keys_by_secret');
    this.sessions = new Table(store, 'sessions');
    this.sessionByToken = new RefIndex(store, 'sessions_by_token');
  }

  private now(): string {
    return iso(this.clock.now());
  }

  getTeam(id: string): TeamRecord | undefined {
    return this.teams.get(GLOBAL, id);
  }

  getUser(id: string): UserRecord | undefined {
    return this.users.get(GLOBAL, id);
  }

  getUserByEmail(email: string): UserRecord | undefined {
    const id = this.userByEmail.get(email.toLowerCase());
    return id ? this.getUser(id) : undefined;
  }

  /** Create a user; the caller checks the email is free (inside the same transaction when racing matters). */
  async createUser(input: { email: string; name?: string | null; password?: string | null }): Promise<UserRecord> {
    const now = this.now();
    const user: UserRecord = {
      id: newId('user'),
      email: input.email.toLowerCase(),
      name: input.name ?? null,
      password_hash: input.password ? await hashPassword(input.password) : null,
      created_at: now,
      updated_at: now,
    };
    await this.store.transaction(() => {
      if (this.userByEmail.get(user.email)) throw new Error(`email taken: ${user.email}`);
      this.users.put(GLOBAL, user);
      this.userByEmail.put(user.email, user.id);
    });
    return user;
  }

  /** The team's role with the given built-in name. */
  builtinRole(teamId: string, builtin: 'owner' | 'member'): RoleRecord | undefined {
    return this.roles.list(teamId).find((r) => r.builtin === builtin);
  }

  /** Create a team with its built-in roles; `ownerUserId` becomes its Owner. */
  async createTeam(input: {
    name: string;
    billing_email: string;
    ownerUserId: string;
    maxCreatedByOwner?: number;
  }): Promise<TeamRecord> {
    const now = this.now();
    const team: TeamRecord = {
      id: newId('team'),
      name: input.name,
      created_at: now,
      updated_at: now,
      deleted_at: null,
      logo_url: generatedLogo(input.name),
      status: 'active',
      billing_email: input.billing_email,
      billing_plan: 'pro_v1',
      billing_address: {
        thoroughfare: null,
        premise: null,
        sublocality: null,
        locality: null,
        administrative_area: null,
        postal_code: null,
        country: null,
      },
      max_servers_per_project: 10,
      is_mfa_required: false,
      is_tailglow_ai_enabled: false,
      has_payment_method: false,
      promo_expires_at: null,
      server_trial_used_at: null,
      promo_server_hours: 0,
      promo_ai_tokens: 0,
      tgl_generations_count: 0,
      tgl_generations_reset_at: null,
      created_by: input.ownerUserId,
    };
    const owner: RoleRecord = {
      id: newId('role'),
      team_id: team.id,
      name: 'Owner',
      description: 'Controls billing, security and account settings',
      scopes: allScopes(),
      builtin: 'owner',
      created_at: now,
      updated_at: now,
    };
    const member: RoleRecord = {
      id: newId('role'),
      team_id: team.id,
      name: 'Member',
      description: 'Works with every resource; reads billing, users and roles',
      scopes: memberScopes(),
      builtin: 'member',
      created_at: now,
      updated_at: now,
    };
    await this.store.transaction(() => {
      if (
        input.maxCreatedByOwner !== undefined &&
        this.countTeamsCreatedBy(input.ownerUserId) >= input.maxCreatedByOwner
      ) {
        throw new ApiError(
          'team_limit_reached',
          `A user may create at most ${input.maxCreatedByOwner} teams; delete one first`,
        );
      }
      this.teams.put(GLOBAL, team);
      this.roles.put(team.id, owner);
      this.roles.put(team.id, member);
      this.addMemberInTxn(team.id, input.ownerUserId, owner.id, now);
    });
    return team;
  }

  /** Teams (live or scheduled for deletion) whose creator is `userId`. */
  countTeamsCreatedBy(userId: string): number {
    let n = 0;
    for (const { value } of this.teams.all()) if (value.created_by === userId) n++;
    return n;
  }

  /** Apply `change` to a team atomically; undefined when the team does not exist. */
  async updateTeam(id: string, change: (current: TeamRecord) => Partial<TeamRecord>): Promise<TeamRecord | undefined> {
    return this.store.transaction(() => {
      const current = this.teams.get(GLOBAL, id);
      if (!current) return undefined;
      const next: TeamRecord = { ...current, ...change(current), id: current.id, updated_at: this.now() };
      this.teams.put(GLOBAL, next);
      return next;
    });
  }

  /**
   * Remove a team's account records in one transaction: API keys (their secrets stop working),
   * roles, memberships and the team itself. Users stay: they may belong to other teams. Callers
   * remove the team's projects first (catalog/purge.ts `destroyTeam`).
   */
  async destroyTeamAccounts(teamId: string): Promise<void> {
    await this.store.transaction(() => {
      for (const key of this.keys.list(teamId)) {
        this.keys.remove(teamId, key.id);
        this.keyBySecret.remove(key.secret_hash);
      }
      for (const membership of this.memberships.list(teamId)) this.removeMemberInTxn(teamId, membership.user_id);
      for (const role of this.roles.list(teamId)) this.roles.remove(teamId, role.id);
      this.teams.remove(GLOBAL, teamId);
    });
  }

  /** Change a user's name and/or email; an email another user has is a conflict. */
  async updateUser(id: string, patch: { name?: string | null; email?: string }): Promise<UserRecord | undefined> {
    return this.store.transaction(() => {
      const current = this.users.get(GLOBAL, id);
      if (!current) return undefined;
      const next: UserRecord = { ...current, updated_at: this.now() };
      if (patch.name !== undefined) next.name = patch.name;
      if (patch.email !== undefined) {
        const email = patch.email.toLowerCase();
        const owner = this.userByEmail.get(email);
        if (owner && owner !== id) throw new ApiError('conflict', `Another user already has the email ${email}`);
        if (email !== current.email) {
          this.userByEmail.remove(current.email);
          this.userByEmail.put(email, id);
          next.email = email;
        }
      }
      this.users.put(GLOBAL, next);
      return next;
    });
  }

  /**
   * Set a user's password and sign out every other session of the user (a password change must
   * end sessions someone else may hold, e.g. the invitation session the inviter saw).
   */
  async setPassword(userId: string, password: string, keepSessionId: string | null): Promise<UserRecord | undefined> {
    const hash = await hashPassword(password);
    return this.store.transaction(() => {
      const current = this.users.get(GLOBAL, userId);
      if (!current) return undefined;
      const next: UserRecord = { ...current, password_hash: hash, updated_at: this.now() };
      this.users.put(GLOBAL, next);
      for (const session of this.sessions.list(userId)) {
        if (session.id === keepSessionId) continue;
        this.sessions.remove(userId, session.id);
        this.sessionByToken.remove(session.token_hash);
      }
      return next;
    });
  }

  /** Stage a membership write; call inside a transaction. */
  addMemberInTxn(teamId: string, userId: string, roleId: string, now = this.now()): MembershipRecord {
    const membership: MembershipRecord = {
      id: userId,
      team_id: teamId,
      user_id: userId,
      role_id: roleId,
      created_at: now,
      updated_at: now,
    };
    this.memberships.put(teamId, membership);
    this.userTeams.put(userId, { id: teamId, created_at: now });
    return membership;
  }

  removeMemberInTxn(teamId: string, userId: string): void {
    this.memberships.remove(teamId, userId);
    this.userTeams.remove(userId, teamId);
  }

  /** Team ids of a user, oldest membership first. */
  teamIdsOf(userId: string): string[] {
    return this.userTeams
      .list(userId)
      .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id))
      .map((t) => t.id);
  }

  /** Create an API key. `secret` is only given by bootstrap (SLUICE_BOOTSTRAP_KEY). */
  async createKey(input: {
    teamId: string;
    name: string;
    scopes: Scopes;
    updatedBy: string | null;
    secret?: string;
  }): Promise<{ key: ApiKeyRecord; secret: string }> {
    const secret = input.secret ?? API_KEY_PREFIX + randomToken(40);
    const now = this.now();
    const key: ApiKeyRecord = {
      id: newId('key'),
      team_id: input.teamId,
      name: input.name,
      scopes: input.scopes,
      secret_hash: hashSecret(secret),
      last4: secret.slice(-4),
      created_at: now,
      updated_at: now,
      updated_by: input.updatedBy,
      last_used_at: null,
    };
    await this.store.transaction(() => {
      if (this.keyBySecret.get(key.secret_hash)) throw new Error('API key secret already in use');
      this.keys.put(key.team_id, key);
      this.keyBySecret.putRef(key.secret_hash, key.team_id, key.id);
    });
    return { key, secret };
  }

  getKey(teamId: string, keyId: string): ApiKeyRecord | undefined {
    return this.keys.get(teamId, keyId);
  }

  listKeys(teamId: string): ApiKeyRecord[] {
    return this.keys.list(teamId);
  }

  /** Rename a key or replace its scopes; `updatedBy` is the user or key making the change. */
  async updateKey(
    teamId: string,
    keyId: string,
    patch: { name?: string; scopes?: Scopes },
    updatedBy: string | null,
  ): Promise<ApiKeyRecord | undefined> {
    return this.store.transaction(() => {
      const current = this.keys.get(teamId, keyId);
      if (!current) return undefined;
      const next: ApiKeyRecord = { ...current, updated_at: this.now(), updated_by: updatedBy };
      if (patch.name !== undefined) next.name = patch.name;
      if (patch.scopes !== undefined) next.scopes = patch.scopes;
      this.keys.put(teamId, next);
      return next;
    });
  }

  async deleteKey(teamId: string, keyId: string): Promise<boolean> {
    return this.store.transaction(() => {
      const key = this.keys.get(teamId, keyId);
      if (!key) return false;
      this.keys.remove(teamId, keyId);
      this.keyBySecret.remove(key.secret_hash);
      return true;
    });
  }

  findKeyBySecret(secret: string): ApiKeyRecord | undefined {
    return this.keyBySecret.find(this.keys, hashSecret(secret));
  }

  /** Record use of a key without a write per request: only when the stored time is older than the resolution. */
  touchKey(key: ApiKeyRecord): void {
    const now = this.clock.now();
    if (key.last_used_at && now - Date.parse(key.last_used_at) < LAST_USED_RESOLUTION_MS) return;
    void this.store.transaction(() => {
      const current = this.keys.get(key.team_id, key.id);
      if (!current) return;
      this.keys.put(key.team_id, { ...current, last_used_at: iso(now) });
    });
  }

  async createSession(
    userId: string,
    ttlMs: number = SESSION_TTL_MS,
  ): Promise<{ session: SessionRecord; token: string }> {
    const token = SESSION_PREFIX + randomToken(40);
    const now = this.clock.now();
    const session: SessionRecord = {
      id: newId('session'),
      user_id: userId,
      token_hash: hashSecret(token),
      created_at: iso(now),
      expires_at: iso(now + ttlMs),
    };
    await this.store.transaction(() => {
      this.sessions.put(userId, session);
      this.sessionByToken.putRef(session.token_hash, userId, session.id);
    });
    return { session, token };
  }

  findSessionByToken(token: string): SessionRecord | undefined {
    const session = this.sessionByToken.find(this.sessions, hashSecret(token));
    if (!session || Date.parse(session.expires_at) <= this.clock.now()) return undefined;
    return session;
  }

  async deleteSession(session: SessionRecord): Promise<void> {
    await this.store.transaction(() => {
      this.sessions.remove(session.user_id, session.id);
      this.sessionByToken.remove(session.token_hash);
    });
  }
}

/** The spec says a new team starts "with a generated logo": a one-colour SVG initial. */
export function generatedLogo(name: string): string {
  const initial = (name.trim()[0] ?? 'T').toUpperCase().replace(/[<>&"']/g, 'T');
  let hue = 0;
  for (const ch of name) hue = (hue * 31 + ch.charCodeAt(0)) % 360;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"><rect width="64" height="64" rx="12" fill="hsl(${hue},55%,45%)"/><text x="32" y="42" font-size="32" font-family="sans-serif" text-anchor="middle" fill="#fff">${initial}</text></svg>`;
  return `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`;
}
