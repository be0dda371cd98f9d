/**
 * Text from the model, a tool or a process, made safe for a terminal. A model that writes
 * `ESC[2J` clears the user's screen; one that writes `\r` or `ESC[1A` and then
 * `[approval] … [o/s/a/d]` draws a question the gateway never asked (#27). `tether chat` prints
 * every such string through one of these two:
 *
 * - `terminalText`: for reading (replies, tool output): escape sequences (CSI, OSC, DCS, …) and
 *   control characters are dropped; newlines and tabs stay.
 * - `visibleText`: for what the user approves (a command, its args): nothing is dropped, every
 *   control character and bidirectional override is shown as an escape (`\x1b`, `\u202e`), so
 *   what is on screen is what will run.
 */

// ESC followed by: CSI (`[` … final byte), OSC/DCS/SOS/PM/APC (… BEL or ESC \), or one more byte.
const ESCAPE_SEQUENCE = /\u001b(?:\[[0-?]*[ -/]*[@-~]?|[\]PX^_][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[\s\S]?)|\u009b[0-?]*[ -/]*[@-~]?|[\u0090\u0098\u009d\u009e\u009f][^\u0007\u001b\u009c]*(?:\u0007|\u001b\\|\u009c)?/g;
// C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and isolates.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
const VISIBLE_CONTROL = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with escape sequences and control characters removed (newlines and tabs kept). */
export function terminalText(text: string): string {
  return text.replace(ESCAPE_SEQUENCE, "").replace(CONTROL, "");
}

/** `text` with every control character shown as an escape: `\n`, `\t`, `\r`, `\x1b`, `\u202e`. */
export function visibleText(text: string): string {
  return text.replace(VISIBLE_CONTROL, (c) => {
    if (c === "\n") return "\\n";
    if (c === "\t") return "\\t";
    if (c === "\r") return "\\r";
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16)}`;
  });
}

/**
 * `text` broken into lines of at most `width` characters, each after the first indented by
 * `indent`: never cut, so a long command's tail stays on screen.
 */
export function wrapText(text: string, width: number, indent = ""): string {
  const room = Math.max(8, width - indent.length);
  const chars = Array.from(text); // whole code points: a line never ends in half a surrogate pair
  const lines: string[] = [];
  for (let i = 0; i < chars.length; i += room) lines.push(chars.slice(i, i + room).join(""));
  return lines.join(`\n${indent}`);
}
