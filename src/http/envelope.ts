import type { ApiError } from '../errors.js';

/** Cursor pagination block of a list response. */
export interface Pagination {
  next_cursor: string | null;
  prev_cursor: string | null;
  limit: number;
}

/** The spec's envelope: every response, success or failure, has exactly these fields. */
export interface Envelope {
  message: string;
  data: unknown;
  status: number;
  error: { code: string; message: string; details?: unknown } | null;
  pagination: Pagination | null;
  endpoint: string;
}

export function successEnvelope(
  endpoint: string,
  status: number,
  data: unknown,
  pagination: Pagination | null = null,
  message = 'OK',
): Envelope {
  return { message, data, status, error: null, pagination, endpoint };
}

export function errorEnvelope(endpoint: string, err: ApiError): Envelope {
  const error: Envelope['error'] = { code: err.code, message: err.message };
  if (err.details !== undefined) error.details = err.details;
  return { message: err.message, data: null, status: err.status, error, pagination: null, endpoint };
}
