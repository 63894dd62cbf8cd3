import { FormatError, position } from './format-error.js';
import { locateJsonError } from './json-locate.js';

export type RecordObject = Record<string, unknown>;

function isObject(v: unknown): v is RecordObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `JSON.parse`, or a FormatError with the line and column where the text first goes wrong. */
export function parseJsonText(text: string, format = 'json'): unknown {
  try {
    return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    const { offset, reason } = locateJsonError(text);
    const p = position(text, offset);
    throw new FormatError(format, reason, p.line, p.column);
  }
}

/** Rule 9: dot-joined object keys; no array indexes, wildcards or empty keys. */
export const RECORDS_PATH_PATTERN = '^[^.\\[\\]*]+(\\.[^.\\[\\]*]+)*$';

/**
 * A JSON response as records (rule 9). Without `recordsPath` an object is one record and an array of
 * objects one record each (as ingest takes them). With it, the value at the path is followed: an
 * array gives one record per element (each must be an object), an object one record; a missing path
 * or any other value is a `parse` failure.
 */
export function jsonRecords(text: string, recordsPath: string | null): RecordObject[] {
  const doc = parseJsonText(text);
  let value: unknown = doc;
  let where = 'the response';
  if (recordsPath !== null) {
    let walked = '';
    for (const key of recordsPath.split('.')) {
      if (!isObject(value) || !Object.hasOwn(value, key)) {
        throw new FormatError(
          'json',
          `json_records_path "${recordsPath}" does not resolve: ${walked === '' ? 'the response' : `"${walked}"`} ${isObject(value) ? `has no key "${key}"` : 'is not an object'}`,
        );
      }
      value = value[key];
      walked = walked === '' ? key : `${walked}.${key}`;
    }
    where = `"${recordsPath}"`;
    if (!isObject(value) && !Array.isArray(value)) {
      throw new FormatError(
        'json',
        `json_records_path "${recordsPath}" resolves to ${value === null ? 'null' : typeof value}, not a list or an object`,
      );
    }
  }
  if (isObject(value)) return [value];
  if (!Array.isArray(value))
    throw new FormatError(
      'json',
      `the response is a ${value === null ? 'null' : typeof value}, not an object or an array of objects; set json_records_path to the list of records`,
    );
  for (let i = 0; i < value.length; i++) {
    if (!isObject(value[i]))
      throw new FormatError(
        'json',
        `element ${i} of ${where} is ${Array.isArray(value[i]) ? 'an array' : value[i] === null ? 'null' : `a ${typeof value[i]}`}, not an object`,
      );
  }
  return value as RecordObject[];
}
