/**
 * The most one tool result may hold (`tools.max_result_bytes`): the text the model reads and the
 * result clients get in `tool.complete` are each cut to it before they reach the store or a frame.
 *
 * Why a cap at the one place every call passes: a result is stored twice (the tool message and
 * the `tool.complete` event), fanned out to every viewer and sent to the model on every later
 * turn. An MCP server's 5 MB answer was stored whole; a file of NULs grew ×24 as JSON and made
 * viewers disconnect (1013). Tools that know their shape cut better themselves (read_file ends on
 * a whole line, an MCP result keeps its text's start); this is the net under all of them, and it
 * says what it cut.
 */

/** Default of `tools.max_result_bytes`. */
export const DEFAULT_MAX_RESULT_BYTES = 1024 * 1024;

/** `text` cut to at most `max` UTF-8 bytes (never inside a character), and how many bytes it had. */
export function cutText(text: string, max: number): { text: string; bytes: number; cut: boolean } {
  const bytes = Buffer.byteLength(text);
  if (bytes <= max) return { text, bytes, cut: false };
  const buf = Buffer.from(text);
  let end = max;
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return { text: buf.subarray(0, end).toString("utf8"), bytes, cut: true };
}

/** JSON bytes of a value as stored and sent (a NUL is six of them, a quote two). */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value ?? null));
}

/** `text` cut so that its JSON takes at most `max` bytes; `bytes` is its UTF-8 size before. */
export function cutJsonText(text: string, max: number): { text: string; bytes: number; cut: boolean } {
  let out = cutText(text, max);
  for (let json = jsonBytes(out.text); json > max; json = jsonBytes(out.text)) {
    const keep = Math.floor(Buffer.byteLength(out.text) * (max / json) * 0.95);
    out = { ...cutText(out.text, keep), bytes: out.bytes, cut: true };
  }
  return out;
}

/** The note that ends a cut text: what was kept and what the limit is. */
export function cutNote(kept: number, total: number, max: number): string {
  return `\n[… cut: ${total - kept} of ${total} bytes left out (tools.max_result_bytes is ${max})]`;
}

/**
 * A call's `{ result, content }` within `max` bytes each. The content keeps its start and says
 * how much was cut; a result whose JSON is over the cap is replaced by a small object saying so,
 * with the cut content as its `text` (clients show something, the store holds the cap at most).
 */
export function capResult(result: unknown, content: string, max: number): { result: unknown; content: string } {
  let outContent = content;
  const c = cutText(content, Math.max(0, max - 128));
  if (c.cut) outContent = c.text + cutNote(Buffer.byteLength(c.text), c.bytes, max);
  const json = JSON.stringify(result ?? null);
  const resultBytes = Buffer.byteLength(json);
  if (resultBytes <= max) return { result, content: outContent };
  // An eighth: even a text of control characters (six bytes each in JSON) stays within the cap.
  const preview = cutText(outContent, Math.floor(max / 8));
  return {
    result: { cut: true, result_bytes: resultBytes, max_result_bytes: max, text: preview.text },
    content: outContent,
  };
}
