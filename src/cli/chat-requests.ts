/**
 * Open requests in `tether chat`: each is shown as a question (an approval: "approve once / for
 * this session / always / deny? [o/s/a/d]"; an MCP server's input request: its message), and the
 * next line typed (or piped) answers the oldest one. Shown again after /resume, from the Snapshot.
 */
import { RequestKind, type OpenRequest } from "../protocol/index.js";
import { terminalText, visibleText, wrapText } from "./terminal-safe.js";

const CHOICES: Record<string, string> = { o: "once", once: "once", s: "session", session: "session", a: "always", always: "always", d: "deny", deny: "deny", n: "deny", no: "deny" };

/** Columns an approval's lines wrap at (the terminal's width when known). */
const DEFAULT_WIDTH = 100;
const INDENT = "    ";

/**
 * The question a request asks. An approval shows everything that will run — the whole args and,
 * from `detail`, the whole command and the folder it runs in — wrapped, never cut, with control
 * characters shown as escapes (#27: a 160-character cut hid `; touch X` behind a harmless echo).
 */
export function describeRequest(r: OpenRequest, width = DEFAULT_WIDTH): string {
  if (r.kind === RequestKind.Approval) {
    const show = (label: string, text: string) => wrapText(`${label}${visibleText(text)}`, width, INDENT);
    const lines = [show(`[approval] ${r.tool ?? "?"} `, JSON.stringify(r.args ?? {}))];
    const detail = r.detail ?? {};
    if (typeof detail.command === "string") lines.push(show("  command: ", detail.command));
    if (typeof detail.cwd === "string") lines.push(show("  folder:  ", detail.cwd));
    return `${lines.join("\n")} — approve once / for this session / always / deny? [o/s/a/d]`;
  }
  if (r.kind === RequestKind.Input) {
    return `[input] ${terminalText(r.server ?? "a tool")} asks: ${terminalText(r.message ?? "")} (type the answer, or "decline")`;
  }
  return `[request] ${r.kind} ${terminalText(r.tool ?? "")}`;
}

/** The `request.respond` answer a typed line means, or an error saying what to type. */
export function answerOf(r: OpenRequest, line: string): { choice?: string; note?: string; content?: Record<string, unknown> } | { error: string } {
  const text = line.trim();
  if (r.kind === RequestKind.Approval) {
    const [word, ...rest] = text.split(/\s+/);
    const choice = CHOICES[(word ?? "").toLowerCase()];
    if (!choice) return { error: "answer o (once), s (for this session), a (always) or d (deny)" };
    const note = rest.join(" ");
    return note ? { choice, note } : { choice };
  }
  if (r.kind === RequestKind.Input) {
    if (/^(decline|cancel)$/i.test(text)) return { choice: text.toLowerCase() };
    const props = Object.keys((r.schema?.properties as Record<string, unknown> | undefined) ?? {});
    // One field: the line is its value; several: a JSON object.
    if (props.length === 1) return { content: { [props[0]!]: text } };
    try {
      const content = JSON.parse(text) as unknown;
      if (content && typeof content === "object" && !Array.isArray(content)) return { content: content as Record<string, unknown> };
    } catch {
      // fall through
    }
    return { error: `answer with a JSON object with ${props.join(", ")}, or "decline"` };
  }
  return { error: `requests of kind ${r.kind} are answered by the client that declared the tool` };
}
