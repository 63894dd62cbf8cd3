/**
 * The one catalogue of API errors. Every error response takes its `error.code` and HTTP status from
 * here; `docs/errors.md` is kept in step by a test. Codes are stable: clients branch on them.
 */
export const errorCatalogue = {
  // ── Request shape ─────────────────────────────────────────────────────────
  request_validation_failed: {
    status: 400,
    message: 'The request is invalid; see error.details for each field to fix',
  },
  request_malformed_json: { status: 400, message: 'The request body is not valid JSON' },
  request_invalid_cursor: {
    status: 400,
    message: 'The pagination cursor is not valid; use pagination.next_cursor or prev_cursor from a previous page',
  },
  request_no_update: { status: 409, message: 'Nothing to change: the resource already is in the requested state' },
  unsupported_media_type: { status: 415, message: 'The body must be JSON (application/json)' },
  payload_too_large: { status: 413, message: 'The request body is larger than the limit' },
  // ── Routing ───────────────────────────────────────────────────────────────
  not_found: { status: 404, message: 'The resource does not exist' },
  route_not_found: { status: 404, message: 'No such endpoint' },
  method_not_allowed: { status: 405, message: 'The endpoint does not accept this method' },
  conflict: { status: 409, message: 'The request conflicts with the current state of the resource' },
  // ── Authentication and authorization ──────────────────────────────────────
  auth_missing_credentials: { status: 401, message: 'Send credentials as "Authorization: Bearer <secret>"' },
  auth_invalid_credentials: { status: 401, message: 'The credentials are not valid' },
  forbidden: { status: 403, message: 'The credentials lack the scope this operation needs' },
  session_required: { status: 403, message: 'This operation needs a signed-in user session, not an API key' },
  owner_required: { status: 403, message: 'Only team Owners may change this' },
  team_restricted: { status: 403, message: 'The team is restricted: the API is read-only apart from billing fields' },
  team_not_active: { status: 403, message: 'The team is not active, so ingest is stopped' },
  csrf_failed: {
    status: 403,
    message: 'A write authenticated by the session cookie must carry the X-Sluice-CSRF header of a Sluice page',
  },
  team_scheduled_for_deletion: {
    status: 403,
    message:
      'The team is scheduled for deletion; an Owner can restore it with POST /v1/teams/:team_id {"deleted_at": null}',
  },
  // ── Accounts ──────────────────────────────────────────────────────────────
  managed_by_service: {
    status: 403,
    message: 'This field is managed by the service and cannot be set by team members',
  },
  mfa_recent_required: {
    status: 403,
    message: 'Changing is_mfa_required needs a recently verified multi-factor sign-in',
  },
  payment_method_required: { status: 402, message: 'This change needs a valid payment method on the team' },
  team_limit_reached: { status: 403, message: 'The user has created the maximum number of teams' },
  builtin_role_immutable: { status: 403, message: 'The built-in Owner and Member roles cannot be changed or deleted' },
  current_password_invalid: { status: 403, message: 'current_password does not match the password set on the account' },
  // ── Ingest ────────────────────────────────────────────────────────────────
  empty_payload: { status: 400, message: 'The request carries no records' },
  frame_invalid: { status: 400, message: 'A record is not valid' },
  idempotency_key_reused: {
    status: 409,
    message: 'The idempotency key was already used for a different request; send new data under a new key',
  },
  source_deleted: { status: 410, message: 'The source this key writes into is deleted' },
  spool_full_disk_gate: { status: 503, message: 'Ingest is paused: free disk space is below the threshold' },
  spool_full_storage_write: { status: 503, message: 'Ingest is paused: the spool could not be written' },
  spool_full_ingest_queue: { status: 503, message: 'Ingest is paused: too many records are waiting to be written' },
  spool_full_wal_unavailable: { status: 503, message: 'Ingest is paused: the spool is unavailable' },
  // ── Views ─────────────────────────────────────────────────────────────────
  view_script_invalid: {
    status: 400,
    message: 'The transform script does not compile; error.details gives the message, line and column',
  },
  // ── Pages ───────────────────────────────────────────────────────────────────
  page_limit_reached: {
    status: 400,
    message: 'The page holds the maximum number of components; delete one before adding another',
  },
  sign_in_required: { status: 401, message: 'This page is private: sign in with an account of its team' },
  // ── Pulls and checks ──────────────────────────────────────────────────────
  check_disabled_by_service: {
    status: 400,
    message:
      'The check was stopped by the service because the team is not in good standing; it restarts on its own when standing is restored',
  },
  // ── Server ────────────────────────────────────────────────────────────────
  server_error: { status: 500, message: 'Something went wrong on the server' },
  service_unavailable: { status: 503, message: 'The server is shutting down or not ready' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof errorCatalogue;

/** One problem with one field of a request: `field` is `body.name`, `query.limit`, `params.project_id`. */
export interface FieldIssue {
  field: string;
  message: string;
}

/** An error that becomes the envelope's `error`. Throw it from anywhere below a handler. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: unknown;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message?: string,
    options: { details?: unknown; cause?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(message ?? errorCatalogue[code].message, { cause: options.cause });
    this.name = 'ApiError';
    this.code = code;
    this.status = errorCatalogue[code].status;
    this.details = options.details;
    this.headers = options.headers ?? {};
  }
}

/** Shorthand for the common case of one invalid field. */
export function invalidField(field: string, message: string): ApiError {
  return new ApiError('request_validation_failed', `${field} ${message}`, {
    details: [{ field, message }] satisfies FieldIssue[],
  });
}

export function notFound(what: string): ApiError {
  return new ApiError('not_found', `${what} not found`);
}

/** Anything that is not an ApiError is a bug or a dependency failure: report it as server_error. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  return new ApiError('server_error', undefined, { cause: err });
}
