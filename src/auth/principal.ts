import type { Scopes } from './scopes.js';

/** Who is calling: an API key or a user session, always acting in exactly one team. */
export interface Principal {
  kind: 'key' | 'session';
  /** Empty only for a session of a user in no team, on routes with `allowNoTeam`. */
  teamId: string;
  /** The signed-in user (sessions), or null for API keys. */
  userId: string | null;
  /** The API key (keys), or null for sessions. */
  keyId: string | null;
  sessionId: string | null;
  scopes: Scopes;
  /** Session of a team Owner. */
  isOwner: boolean;
}
