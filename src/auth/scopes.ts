/** The spec's scope names (keys of a Scopes map) and actions. */
export const SCOPE_NAMES = [
  'users',
  'roles',
  'keys',
  'records',
  'projects',
  'metrics',
  'views',
  'billing',
  'pages',
  'monitors',
  'alerts',
  'chats',
  'secrets',
  'servers',
  'ingest_keys',
  'sources',
  'domains',
  'facets',
  'drains',
  'pulls',
  'checks',
  'logs',
] as const;
export const ACTIONS = ['read', 'write', 'delete'] as const;

export type ScopeName = (typeof SCOPE_NAMES)[number];
export type Action = (typeof ACTIONS)[number];
/** Object mapping a scope name to the actions granted on it. */
export type Scopes = Partial<Record<ScopeName, Action[]>>;
/** What a route requires, e.g. `projects:read`. */
export type ScopeRequirement = `${ScopeName}:${Action}`;

export function allScopes(): Scopes {
  const out: Scopes = {};
  for (const name of SCOPE_NAMES) out[name] = [...ACTIONS];
  return out;
}

export function hasScope(scopes: Scopes, required: ScopeRequirement): boolean {
  const [name, action] = required.split(':') as [ScopeName, Action];
  return scopes[name]?.includes(action) ?? false;
}

/** Requested scopes the grantor does not hold, as `name:action` strings (empty when all are held). */
export function scopesNotHeld(grantor: Scopes, requested: Scopes): string[] {
  const missing: string[] = [];
  for (const [name, actions] of Object.entries(requested) as [ScopeName, Action[]][]) {
    for (const action of actions) if (!grantor[name]?.includes(action)) missing.push(`${name}:${action}`);
  }
  return missing;
}

/** Canonical form: known names in spec order, actions deduplicated in read/write/delete order, empty entries dropped. */
export function normalizeScopes(scopes: Scopes): Scopes {
  const out: Scopes = {};
  for (const name of SCOPE_NAMES) {
    const actions = scopes[name];
    if (!actions?.length) continue;
    out[name] = ACTIONS.filter((a) => actions.includes(a));
  }
  return out;
}

/** JSON Schema of a Scopes map. */
export const scopesSchema = {
  type: 'object',
  propertyNames: { enum: [...SCOPE_NAMES] },
  additionalProperties: {
    type: 'array',
    items: { enum: [...ACTIONS] },
    uniqueItems: true,
    maxItems: ACTIONS.length,
  },
} as const;
