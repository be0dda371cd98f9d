/**
 * How deep JSON text nests, found by one linear pass over the raw text before it is parsed.
 * `JSON.parse` itself takes 100,000 nested `[` in its stride, but everything that walks the value
 * afterwards — schema validation, `JSON.stringify`, structured clone — recurses, and overflows the
 * stack with a RangeError (#27: an answer -32603/500 with its stack). A frame or body nested past
 * the limit is refused by name first (`json_too_deep`, 4014 / HTTP 400).
 *
 *   if (jsonDepthExceeds(text, 64)) throw new TetherError(ErrorCode.JsonTooDeep, …);
 */

/** Default of `limits.max_json_depth`: far above any request Tether reads (its deepest schemas nest ~10). */
export const DEFAULT_MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;

/**
 * True when arrays and objects in `text` nest deeper than `max` levels (`[]` is 1). Brackets
 * inside strings do not count; the text need not be valid JSON (the parser says what else is
 * wrong). Stops at the first level past `max`.
 */
export function jsonDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) depth--;
  }
  return false;
}

/** The message a refusal carries: it names the limit and the config key that sets it. */
export function jsonTooDeepMessage(max: number): string {
  return `JSON nested deeper than ${max} levels of arrays and objects (limits.max_json_depth)`;
}
