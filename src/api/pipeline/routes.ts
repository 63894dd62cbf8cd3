import { iso } from '../../clock.js';
import { ApiError, notFound } from '../../errors.js';
import { pathIdSchema } from '../../ids.js';
import { isLocalServer, localServerId } from '../../ingest/local-server.js';
import { minuteOf } from '../../telemetry/pipeline-telemetry.js';
import type { Services } from '../../services.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { isoDateString, object, params } from '../http/schemas.js';
import { requireProject } from '../projects/routes.js';
import { MAX_BUCKETS, pipelineAggregation, type TelemetryInterval } from './timeseries.js';

type ProjectParams = { project_id: string };
type ServerParams = { project_id: string; server_id: string };
type RangeQuery = { start_at?: string; end_at?: string; interval?: TelemetryInterval };

const rangeQuery = object({
  start_at: isoDateString,
  end_at: isoDateString,
  interval: { type: 'string', enum: ['minute', 'hour'] },
});

const serverParams = {
  type: 'object',
  properties: {
    project_id: pathIdSchema('project'),
    server_id: { type: 'string', minLength: 1, maxLength: 64, errorHint: 'must be a server id of this project' },
  },
  required: ['project_id', 'server_id'],
};

const TWELVE_HOURS = 12 * 60 * 60 * 1000;

/** Pipeline telemetry: project history, the live pipeline, and the history of the project's server 0. */
export function pipelineRoutes(s: Pick<Services, 'clock' | 'projects' | 'spool' | 'telemetry'>): RouteDef[] {
  const history = (projectId: string, q: RangeQuery) => {
    const now = s.clock.now();
    const interval = q.interval ?? 'minute';
    const end = q.end_at ? Date.parse(q.end_at) : now;
    const start = q.start_at ? Date.parse(q.start_at) : end - TWELVE_HOURS;
    if (start >= end) {
      throw new ApiError('request_validation_failed', 'start_at must be before end_at', {
        details: [{ field: 'query.start_at', message: 'must be before end_at' }],
      });
    }
    const step = interval === 'minute' ? 60_000 : 3_600_000;
    if ((end - start) / step > MAX_BUCKETS[interval]) {
      throw new ApiError(
        'request_validation_failed',
        `The range spans more than ${MAX_BUCKETS[interval]} ${interval}s; narrow it or use a coarser interval`,
        {
          details: [
            { field: 'query.start_at', message: `must be at most ${MAX_BUCKETS[interval]} ${interval}s before end_at` },
          ],
        },
      );
    }
    const first = Math.floor(start / step) * step;
    const minutes = s.telemetry.range(projectId, first, end);
    return pipelineAggregation(minutes, start, end, interval, s.telemetry.startedAt, now);
  };

  return [
    defineRoute<unknown, RangeQuery, ProjectParams>({
      method: 'GET',
      path: '/v1/projects/:project_id/pipeline',
      scope: 'servers:read',
      summary: 'Pipeline history: Pending, Throughput and Errors per minute or hour',
      schema: { params: params({ project_id: 'project' }), query: rangeQuery },
      handler: (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        return { data: history(project.id, ctx.query) };
      },
    }),
    defineRoute<unknown, unknown, ProjectParams>({
      method: 'GET',
      path: '/v1/projects/:project_id/pipeline/live',
      scope: 'servers:read',
      summary: 'The live pipeline: queue now, totals of the last completed minute',
      schema: { params: params({ project_id: 'project' }) },
      handler: (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        return { data: livePipeline(s, project.id) };
      },
    }),
    defineRoute<unknown, RangeQuery, ServerParams>({
      method: 'GET',
      path: '/v1/projects/:project_id/servers/:server_id/pipeline',
      scope: 'servers:read',
      summary: "Pipeline history of one of the project's servers",
      schema: { params: serverParams, query: rangeQuery },
      handler: (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        if (!isLocalServer(project.id, ctx.params.server_id)) {
          throw notFound(`Server ${ctx.params.server_id} (this project's server is ${localServerId(project.id)})`);
        }
        return { data: history(project.id, ctx.query) };
      },
    }),
  ];
}

/** Spec: Live pipeline. This node is the project's only server and observes its queue directly. */
export function livePipeline(s: Pick<Services, 'clock' | 'spool' | 'telemetry'>, projectId: string) {
  const now = s.clock.now();
  const windowStart = minuteOf(now) - 60_000;
  const minute = s.telemetry.minute(projectId, windowStart);
  // Totals are complete when this node ran the whole minute or persisted counters for it.
  const complete = minute !== undefined || s.telemetry.startedAt <= windowStart;
  return {
    object: 'project_pipeline_live',
    observed_at: iso(now),
    pending_records: s.spool.pendingRecords(projectId),
    processing_records: s.spool.processingRecords(projectId),
    pending_observed_at: iso(now),
    // Counters are read in one synchronous step, so the queue cannot change during inspection.
    pending_is_estimated: false,
    state: 'fresh' as const,
    contributing_servers: 1,
    fresh_servers: 1,
    window_start_at: iso(windowStart),
    window_end_at: iso(windowStart + 60_000),
    throughput_records: complete ? (minute?.throughput_records ?? 0) : null,
    errors: complete ? (minute?.errors ?? 0) : null,
    pipeline_error_counts: complete ? { ...(minute?.error_counts ?? {}) } : null,
  };
}
