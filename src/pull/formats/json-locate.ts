/**
 * Where a JSON text first goes wrong, and why: a strict scanner (RFC 8259) run only after
 * `JSON.parse` refused the text, because V8's messages do not always carry a position.
 */
export function locateJsonError(text: string): { offset: number; reason: string } {
  let i = 0;
  const fail = (reason: string): never => {
    throw { offset: i, reason };
  };
  const ws = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  const describe = () =>
    i >= text.length ? 'unexpected end of input' : `unexpected character ${JSON.stringify(text[i])}`;
  const str = () => {
    i++;
    for (;;) {
      if (i >= text.length) fail('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 34) return void i++;
      if (c < 0x20) fail('control character in string (escape it)');
      if (c === 92) {
        const e = text[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) {
            i++;
            fail('invalid \\u escape');
          }
          i += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else {
          i++;
          fail('invalid escape in string');
        }
      } else i++;
    }
  };
  const num = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m || m[0] === '-') fail('invalid number');
    i += m![0].length;
  };
  const value = (depth: number): void => {
    if (depth > 512) fail('nesting deeper than 512 levels');
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      ws();
      if (text[i] === '}') return void i++;
      for (;;) {
        ws();
        if (text[i] !== '"') fail(`expected a double-quoted property name, ${describe()}`);
        str();
        ws();
        if (text[i] !== ':') fail(`expected ':' after a property name, ${describe()}`);
        i++;
        value(depth + 1);
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') return void i++;
        fail(`expected ',' or '}' after a property value, ${describe()}`);
      }
    }
    if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') return void i++;
      for (;;) {
        value(depth + 1);
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') return void i++;
        fail(`expected ',' or ']' after an array element, ${describe()}`);
      }
    }
    if (c === '"') return str();
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return num();
    for (const word of ['true', 'false', 'null']) {
      if (text.startsWith(word, i)) return void (i += word.length);
    }
    fail(describe());
  };
  try {
    if (text.charCodeAt(0) === 0xfeff) i = 1;
    value(0);
    ws();
    if (i < text.length) fail(`unexpected content after the JSON value: ${JSON.stringify(text[i])}`);
    return { offset: i, reason: 'not valid JSON' };
  } catch (err) {
    if (typeof err === 'object' && err !== null && 'offset' in err) return err as { offset: number; reason: string };
    return { offset: i, reason: 'not valid JSON' };
  }
}
