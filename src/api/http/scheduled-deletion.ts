import { iso } from '../../clock.js';
import { ApiError } from '../../errors.js';
import type { ScopeRequirement } from '../../auth/scopes.js';
import type { Services } from '../../services.js';
import { defineRoute, type JsonSchema, type RequestContext, type RouteDef } from './route.js';

/** A resource with the spec's scheduled deletion: DELETE hides it, `deleted_at: null` restores, `/force` destroys. */
export interface DeletableResource<T extends { id: string; deleted_at: string | null }, P> {
  /** `project`, `source`, `collection`: used in summaries and messages. */
  noun: string;
  /** The resource's own path, e.g. `/v1/projects/:project_id`. */
  path: string;
  scope: ScopeRequirement;
  params: JsonSchema;
  /** What `/force` destroys beyond the resource itself, for the route summary. */
  beneath: string;
  /** The resource the path names, live or scheduled, or throw 404. */
  find(ctx: RequestContext<unknown, unknown, P>): T;
  /** Persist `deleted_at`; undefined when the resource vanished meanwhile. */
  markDeleted(current: T, deletedAt: string): Promise<T | undefined>;
  destroy(current: T): Promise<void>;
  serialize(record: T): unknown;
}

/** DELETE (schedule; 200 with the resource) and DELETE …/force (destroy now; 200 with data null). */
export function scheduledDeletionRoutes<T extends { id: string; deleted_at: string | null }, P>(
  s: Pick<Services, 'clock'>,
  r: DeletableResource<T, P>,
): RouteDef[] {
  return [
    defineRoute<unknown, unknown, P>({
      method: 'DELETE',
      path: r.path,
      scope: r.scope,
      summary: `Schedule a ${r.noun} for deletion (removed after 7 days)`,
      schema: { params: r.params },
      handler: async (ctx) => {
        const current = r.find(ctx);
        // Deleting again keeps the first deletion time, so the 7 days are not restarted.
        if (current.deleted_at) return { data: r.serialize(current) };
        const updated = await r.markDeleted(current, iso(s.clock.now()));
        return { data: r.serialize(updated ?? current) };
      },
    }),
    defineRoute<unknown, unknown, P>({
      method: 'DELETE',
      path: `${r.path}/force`,
      scope: r.scope,
      summary: `Destroy a ${r.noun} (live or scheduled) with ${r.beneath} now`,
      schema: { params: r.params },
      handler: async (ctx) => {
        await r.destroy(r.find(ctx));
        return { data: null };
      },
    }),
  ];
}

/** While a resource is scheduled for deletion, the only accepted update is the one restoring it. */
export function assertRestoreFirst(
  noun: string,
  current: { deleted_at: string | null },
  body: { deleted_at?: string | null },
): void {
  if (current.deleted_at && body.deleted_at !== null) {
    throw new ApiError(
      'conflict',
      `The ${noun} is scheduled for deletion; send {"deleted_at": null} to restore it before changing it`,
    );
  }
}
