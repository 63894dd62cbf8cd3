import { invalidField } from '../../errors.js';

/** Spec limit: a team logo is a JPEG or PNG base64 data URI of at most 5 MB (decoded image bytes). */
export const MAX_LOGO_BYTES = 5 * 1024 * 1024;
/** Base64 length of MAX_LOGO_BYTES plus the longest prefix: the schema's maxLength. */
export const MAX_LOGO_URI_LENGTH = Math.ceil(MAX_LOGO_BYTES / 3) * 4 + 'data:image/jpeg;base64,'.length;

const DATA_URI = /^data:image\/(png|jpeg);base64,([A-Za-z0-9+/]*={0,2})$/;
const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * Check a logo data URI: declared type png/jpeg, valid base64, size limit, and that the bytes really
 * are the declared format (magic numbers), so a renamed file is refused with a clear message.
 */
export function assertValidLogo(field: string, uri: string): void {
  const m = DATA_URI.exec(uri);
  if (!m)
    throw invalidField(field, 'must be a base64 data URI of a PNG or JPEG image, e.g. data:image/png;base64,iVBOR…');
  const bytes = Buffer.from(m[2]!, 'base64');
  if (bytes.length === 0) throw invalidField(field, 'holds no image data');
  if (bytes.length > MAX_LOGO_BYTES)
    throw invalidField(field, `is ${bytes.length} bytes; a logo may be at most 5 MB (${MAX_LOGO_BYTES} bytes)`);
  const isPng = bytes.subarray(0, 8).equals(PNG_MAGIC);
  const isJpeg = bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
  if (m[1] === 'png' && !isPng) throw invalidField(field, 'says image/png but the data is not a PNG image');
  if (m[1] === 'jpeg' && !isJpeg) throw invalidField(field, 'says image/jpeg but the data is not a JPEG image');
}
