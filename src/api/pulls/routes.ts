import type { PullCreateInput, PullUpdateInput } from '../../pull/pull-service.js';
import type { PullRecord } from '../../pull/records.js';
import type { Services } from '../../services.js';
import type { ListOrder } from '../http/pagination.js';
import type { RouteDef } from '../http/route.js';
import { fetchJobRoutes } from './fetch-job-routes.js';
import { pullCreateBody, pullUpdateBody } from './schemas.js';
import { serializePull } from './serialize.js';

/** Spec: `order_by` name, created_at, last_success_at; default created_at, `sort` default desc. */
const pullOrder: ListOrder<PullRecord> = {
  fields: {
    name: (x) => x.name.toLowerCase(),
    created_at: (x) => x.created_at,
    last_success_at: (x) => x.last_success_at,
  },
  defaultOrderBy: 'created_at',
  defaultSort: 'desc',
};

export function pullRoutes(s: Pick<Services, 'clock' | 'projects' | 'pulls' | 'sources'>): RouteDef[] {
  return fetchJobRoutes<PullRecord, PullCreateInput, PullUpdateInput>(s, {
    noun: 'pull',
    idKind: 'pull',
    scope: 'pulls',
    service: s.pulls,
    order: pullOrder,
    createBody: pullCreateBody,
    updateBody: pullUpdateBody,
    updateFields:
      'name, collection_slug, endpoint_url, method, headers, request_body, json_records_path or schedule_cron',
    serialize: (x) => serializePull(s, x),
  });
}
