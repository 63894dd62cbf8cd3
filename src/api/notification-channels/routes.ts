import { invalidField, notFound } from '../../errors.js';
import type { Services } from '../../services.js';
import {
  CHANNEL_LIMITS,
  CHANNEL_TYPES,
  type ChannelRecord,
  type DeliveryAttempt,
} from '../../notify/channel-records.js';
import type { ChannelInput } from '../../notify/notifier.js';
import { listRoute } from '../http/list-route.js';
import { namedResourceOrder } from '../http/list-route.js';
import type { ListQuery } from '../http/pagination.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { object, params, text } from '../http/schemas.js';
import { requireProject } from '../projects/routes.js';

type ProjectParams = { project_id: string };
type ChannelParams = ProjectParams & { channel_id: string };

const url = {
  type: 'string',
  minLength: 1,
  maxLength: CHANNEL_LIMITS.url,
  pattern: '^https://',
  errorHint: `must be an https URL of at most ${CHANNEL_LIMITS.url} characters`,
};

/** The channel as the API shows it; the secret only once (`reveal`), else its last 4 characters. */
export function serializeChannel(c: ChannelRecord, reveal = false) {
  return {
    object: 'notification_channel',
    id: c.id,
    team_id: c.team_id,
    project_id: c.project_id,
    name: c.name,
    type: c.type,
    url: c.url,
    status: c.status,
    disabled_reason: c.disabled_reason,
    ...(reveal ? { secret: c.secret } : {}),
    secret_last4: c.secret ? c.secret.slice(-4) : null,
    created_at: c.created_at,
    updated_at: c.updated_at,
  };
}

export function serializeAttempt(a: DeliveryAttempt) {
  return { object: 'notification_delivery', ...a };
}

/** Notification channels (ours, docs/notifications.md): under monitors' scopes, as they exist for monitors. */
export function notificationChannelRoutes(s: Pick<Services, 'notifier' | 'projects'>): RouteDef[] {
  const base = '/v1/projects/:project_id/notification_channels';
  const one = `${base}/:channel_id`;
  const channelParams = params({ project_id: 'project', channel_id: 'notificationChannel' });
  const find = (teamId: string, p: ChannelParams) => {
    const project = requireProject(s, teamId, p.project_id);
    const c = s.notifier.get(project.id, p.channel_id);
    if (!c) throw notFound(`Notification channel ${p.channel_id} in project ${project.id}`);
    return c;
  };
  return [
    listRoute<ChannelRecord, ListQuery, ProjectParams>({
      path: base,
      scope: 'monitors:read',
      summary: 'List the notification channels of a project',
      params: params({ project_id: 'project' }),
      order: namedResourceOrder<ChannelRecord>(),
      items: (ctx) => s.notifier.list(requireProject(s, ctx.principal.teamId, ctx.params.project_id).id),
      serialize: (c) => serializeChannel(c),
    }),
    defineRoute<ChannelInput, unknown, ProjectParams>({
      method: 'POST',
      path: base,
      scope: 'monitors:write',
      summary:
        'Create a notification channel (a webhook signed per Standard Webhooks, or an Alertmanager receiver); the secret is shown once',
      schema: {
        params: params({ project_id: 'project' }),
        body: object({ name: text(1, CHANNEL_LIMITS.name), type: { enum: [...CHANNEL_TYPES] }, url }, [
          'name',
          'type',
          'url',
        ]),
      },
      handler: async (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        return { status: 201, data: serializeChannel(await s.notifier.create(project, ctx.body), true) };
      },
    }),
    defineRoute<unknown, unknown, ChannelParams>({
      method: 'GET',
      path: one,
      scope: 'monitors:read',
      summary: 'Get a notification channel',
      schema: { params: channelParams },
      handler: (ctx) => ({ data: serializeChannel(find(ctx.principal.teamId, ctx.params)) }),
    }),
    defineRoute<{ name?: string; url?: string; status?: 'active' }, unknown, ChannelParams>({
      method: 'POST',
      path: one,
      scope: 'monitors:write',
      summary: 'Update a notification channel, or re-enable one the service disabled ({"status": "active"})',
      schema: {
        params: channelParams,
        body: object({
          name: text(1, CHANNEL_LIMITS.name),
          url,
          status: { enum: ['active'], errorHint: 'can only be "active" (re-enables a channel disabled after a 410)' },
        }),
      },
      handler: async (ctx) => {
        if (Object.keys(ctx.body).length === 0) throw invalidField('body', 'must contain at least one field to change');
        return { data: serializeChannel(await s.notifier.update(find(ctx.principal.teamId, ctx.params), ctx.body)) };
      },
    }),
    defineRoute<unknown, unknown, ChannelParams>({
      method: 'DELETE',
      path: one,
      scope: 'monitors:delete',
      summary: 'Delete a notification channel (its undelivered events are dropped)',
      schema: { params: channelParams },
      handler: async (ctx) => {
        await s.notifier.remove(find(ctx.principal.teamId, ctx.params));
        return { data: null };
      },
    }),
    defineRoute<unknown, unknown, ChannelParams>({
      method: 'POST',
      path: `${one}/test`,
      scope: 'monitors:write',
      summary: 'Send a test event to the channel now; answers the attempt (status, latency)',
      schema: { params: channelParams },
      handler: async (ctx) => ({
        data: serializeAttempt(await s.notifier.test(find(ctx.principal.teamId, ctx.params))),
      }),
    }),
    defineRoute<unknown, unknown, ChannelParams>({
      method: 'GET',
      path: `${one}/deliveries`,
      scope: 'monitors:read',
      summary: `The channel's last ${CHANNEL_LIMITS.deliveryLog} delivery attempts, newest first`,
      schema: { params: channelParams },
      handler: (ctx) => ({
        data: s.notifier.db.attempts(find(ctx.principal.teamId, ctx.params).id).map(serializeAttempt),
      }),
    }),
  ];
}
