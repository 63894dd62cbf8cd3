import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomToken } from './ids.js';
import { allScopes } from './auth/scopes.js';
import type { Services } from './services.js';

export interface BootstrapCredentials {
  email: string;
  password: string;
  api_key: string;
  team_id: string;
  user_id: string;
}

const META_DB = 'meta';
const BOOTSTRAPPED = 'bootstrapped_at';

/**
 * On first start (no owner yet) create the owner user, a team named `Team` and an all-scope API
 * key (docs/architecture.md, "Fixed contracts"). Returns the credentials once; later starts return null and change nothing.
 */
export async function bootstrap(
  s: Pick<Services, 'accounts' | 'clock' | 'config' | 'store'>,
): Promise<BootstrapCredentials | null> {
  const meta = s.store.db<string, string>(META_DB);
  if (meta.get(BOOTSTRAPPED)) return null;
  const password = s.config.adminPassword ?? randomToken(24);
  const user = await s.accounts.createUser({ email: s.config.adminEmail, name: 'Admin', password });
  const team = await s.accounts.createTeam({ name: 'Team', billing_email: user.email, ownerUserId: user.id });
  const { secret } = await s.accounts.createKey({
    teamId: team.id,
    name: 'Bootstrap key',
    scopes: allScopes(),
    updatedBy: user.id,
    ...(s.config.bootstrapKey ? { secret: s.config.bootstrapKey } : {}),
  });
  const creds: BootstrapCredentials = {
    email: user.email,
    password,
    api_key: secret,
    team_id: team.id,
    user_id: user.id,
  };
  writeFileSync(join(s.config.dataDir, 'bootstrap.json'), JSON.stringify(creds, null, 2) + '\n', { mode: 0o600 });
  await meta.put(BOOTSTRAPPED, new Date(s.clock.now()).toISOString());
  return creds;
}
