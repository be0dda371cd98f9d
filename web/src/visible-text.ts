/**
 * What an approval shows must be what runs: a command's control characters and bidirectional
 * overrides (U+202E turns `; rm -rf ~` around on screen) are shown as escapes (`\x1b`, `\u202e`),
 * never rendered. Newlines and tabs stay as they are (a script's lines).
 */
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g;

export function visibleText(text: string): string {
  return text.replace(HIDDEN, (c) => {
    const code = c.charCodeAt(0);
    if (c === "\r") return "\\r";
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16)}`;
  });
}
