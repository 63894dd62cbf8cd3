/**
 * Binding lines in a view's free-text hint. A line binds when it reads `field: path` or
 * `field <- path`: optional leading `-` or `*` bullet, the output field's name (or the name as a
 * JSON string, for names holding `:` or `<-`), the first `:` or `<-`, then one path, optionally
 * in backticks. Lines naming no output field are prose and ignored; so is the rest of the hint.
 * Several lines for one field give candidates in line order.
 */

/** Output field name → path texts (unparsed), for names in `fieldNames` only. */
export function hintBindings(hint: string | null, fieldNames: readonly string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  if (hint === null) return out;
  const names = new Set(fieldNames);
  for (const raw of hint.split(/\r\n|\r|\n/)) {
    const line = raw.trim().replace(/^[-*]\s+/, '');
    const parsed = parseLine(line);
    if (parsed === null || !names.has(parsed.field)) continue;
    const list = out.get(parsed.field);
    if (list) list.push(parsed.path);
    else out.set(parsed.field, [parsed.path]);
  }
  return out;
}

function parseLine(line: string): { field: string; path: string } | null {
  let field: string;
  let rest: string;
  if (line.startsWith('"')) {
    const close = closingQuote(line);
    if (close < 0) return null;
    try {
      field = JSON.parse(line.slice(0, close + 1)) as string;
    } catch {
      return null;
    }
    rest = line.slice(close + 1).trimStart();
  } else {
    const m = /^(.*?)\s*(?=:|<-)/.exec(line);
    if (m === null) return null;
    field = m[1]!;
    rest = line.slice(m[0].length);
  }
  if (rest.startsWith('<-')) rest = rest.slice(2);
  else if (rest.startsWith(':')) rest = rest.slice(1);
  else return null;
  let path = rest.trim();
  if (path.length >= 2 && path.startsWith('`') && path.endsWith('`')) path = path.slice(1, -1).trim();
  return field === '' || path === '' ? null : { field, path };
}

function closingQuote(line: string): number {
  for (let j = 1; j < line.length; j += line[j] === '\\' ? 2 : 1) if (line[j] === '"') return j;
  return -1;
}
