import type { CheckCreateInput, CheckUpdateInput } from '../../pull/check-service.js';
import type { CheckRecord } from '../../pull/records.js';
import type { Services } from '../../services.js';
import type { ListOrder } from '../http/pagination.js';
import type { RouteDef } from '../http/route.js';
import { fetchJobRoutes } from '../pulls/fetch-job-routes.js';
import { serializeCheck } from '../pulls/serialize.js';
import { checkCreateBody, checkUpdateBody } from './schemas.js';

/** Spec: `order_by` name, created_at; default created_at, `sort` default desc. */
const checkOrder: ListOrder<CheckRecord> = {
  fields: { name: (x) => x.name.toLowerCase(), created_at: (x) => x.created_at },
  defaultOrderBy: 'created_at',
  defaultSort: 'desc',
};

export function checkRoutes(s: Pick<Services, 'checks' | 'clock' | 'projects' | 'sources'>): RouteDef[] {
  return fetchJobRoutes<CheckRecord, CheckCreateInput, CheckUpdateInput>(s, {
    noun: 'check',
    idKind: 'check',
    scope: 'checks',
    service: s.checks,
    order: checkOrder,
    createBody: checkCreateBody,
    updateBody: checkUpdateBody,
    updateFields:
      'name, collection_slug, endpoint_url, method, headers, request_body, schedule_cron or check_retry_seconds',
    serialize: (x) => serializeCheck(s, x),
  });
}
