import { invalidField } from '../errors.js';
import type { OutboundClient } from '../outbound/types.js';
import { validateUserCron } from '../schedule/cron.js';
import { type HeaderList, headersForCreate } from './headers.js';
import type { FetchMethod } from './records.js';

/**
 * The request rules pulls and checks share (spec api-2, Pulls rules 2, 5, 7; Checks rules): checked on
 * create and on update against the configuration the update would leave.
 */

/** Rule 5: `request_body` only with `post`; changing `post` → `get` needs the body cleared. */
export function checkMethodBody(
  method: FetchMethod,
  body: string | null,
  sent: { method?: unknown; request_body?: unknown },
): void {
  if (method === 'get' && body !== null) {
    const field = sent.request_body !== undefined ? 'body.request_body' : 'body.method';
    const message =
      sent.request_body !== undefined
        ? 'is accepted only with method "post"'
        : 'cannot change to "get" while request_body is set; send "request_body": null with it';
    throw invalidField(field, message);
  }
}

/** Rule 7: five fields, UTC, one minute at finest (validated by the scheduler's own cron reader). */
export function checkCron(expr: string): void {
  const v = validateUserCron(expr);
  if (!v.ok) throw invalidField('body.schedule_cron', `is not a valid cron expression: ${v.message}`);
}

/**
 * Rule 2: HTTPS at a public address. The URL's shape is checked here (so the message says what to fix);
 * the addresses its host resolves to are checked by the outbound client, which repeats the check on
 * every fetch and every redirect.
 */
export async function checkEndpoint(outbound: OutboundClient, url: string): Promise<void> {
  const field = 'body.endpoint_url';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidField(field, 'is not a valid URL; send an absolute https:// URL');
  }
  if (parsed.protocol !== 'https:')
    throw invalidField(field, `must use https:// (got ${parsed.protocol.replace(/:$/, '')})`);
  if (parsed.username || parsed.password)
    throw invalidField(field, 'must not carry credentials in the URL; send them as a header');
  const verdict = await outbound.checkTarget(url, { requireHttps: true });
  if (!verdict.ok) throw invalidField(field, `is refused: ${verdict.message}`);
}

/** What a create body of a pull or a check sends about its request, before the defaults. */
export interface RequestInput {
  method?: FetchMethod;
  request_body?: string | null;
  schedule_cron?: string;
  headers?: Record<string, unknown> | null;
  endpoint_url: string;
}

/** The request of a new pull or check with the defaults applied, after every request rule held. */
export async function checkCreateRequest(
  outbound: OutboundClient,
  input: RequestInput,
): Promise<{ method: FetchMethod; body: string | null; cron: string; headers: HeaderList }> {
  const method = input.method ?? 'get';
  const body = input.request_body ?? null;
  checkMethodBody(method, body, input);
  const cron = input.schedule_cron ?? '* * * * *';
  checkCron(cron);
  const headers = headersForCreate(input.headers);
  await checkEndpoint(outbound, input.endpoint_url);
  return { method, body, cron, headers };
}
