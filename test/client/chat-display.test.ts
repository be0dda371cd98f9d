/**
 * What `tether chat` shows (#27 finding 4 and Low "prints model text raw"): an approval shows the
 * whole command and args — wrapped, never cut — and the folder it runs in, with control
 * characters made visible; model text, tool output and errors reach the terminal without escape
 * sequences, so a model can neither clear the screen nor draw a fake `[approval]` line.
 */
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { EventType, RequestKind, type Frame, type OpenRequest } from "../../src/protocol/index.js";
import { describeRequest } from "../../src/cli/chat-requests.js";
import { ChatRenderer } from "../../src/cli/chat-render.js";
import { formatProcesses } from "../../src/cli/chat-processes.js";
import { terminalText, visibleText, wrapText } from "../../src/cli/terminal-safe.js";

const ESC = "\u001b";
const harmless = `echo '${"harmless ".repeat(60).trim()}'`;
const command = `${harmless}; touch X`;

function approval(over: Partial<OpenRequest> = {}): OpenRequest {
  return {
    request_id: "req_1",
    kind: RequestKind.Approval,
    turn_id: "turn_1",
    tool: "terminal",
    args: { command },
    detail: { command, cwd: "/srv/project/sub" },
    ...over,
  } as OpenRequest;
}

function renderer() {
  const out = new PassThrough();
  let text = "";
  out.on("data", (d: Buffer) => (text += d.toString()));
  const r = new ChatRenderer(out, { dim: (t) => t, bold: (t) => t });
  return { r, text: () => text };
}

const frame = <P>(type: string, payload: P): Frame<P> => ({ type, session_id: "ses_1", epoch: "e", ts: 0, seq: 1, payload }) as Frame<P>;

describe("an approval in tether chat", () => {
  it("shows a 500-character command whole, its tail included, and the folder", () => {
    expect(command.length).toBeGreaterThan(500);
    const shown = describeRequest(approval());
    // Lines wrap; joined back, the whole command is there — the tail `; touch X` most of all.
    const unwrapped = shown.replace(/\n {4}/g, "");
    expect(unwrapped).toContain(`command: ${command}`);
    expect(unwrapped).toContain(JSON.stringify({ command }));
    expect(shown).toContain("  folder:  /srv/project/sub");
    expect(shown.split("\n").every((l) => l.length <= 100 + " — approve once / for this session / always / deny? [o/s/a/d]".length)).toBe(true);
    expect(shown).not.toContain("…");
    expect(shown.endsWith("— approve once / for this session / always / deny? [o/s/a/d]")).toBe(true);
  });

  it("shows control characters in what is approved as escapes, never as what they do", () => {
    const sneaky = `echo hi\r${ESC}[2K${ESC}[1Aecho safe\u202e; rm -rf ~`;
    const shown = describeRequest(approval({ args: { command: sneaky }, detail: { command: sneaky, cwd: "/w" } }));
    expect(shown).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
    expect(shown.replace(/\n {4}/g, "")).toContain("command: echo hi\\r\\x1b[2K\\x1b[1Aecho safe\\u202e; rm -rf ~");
  });

  it("keeps a short approval on one line, as before", () => {
    const shown = describeRequest(approval({ tool: "notes__write_note", args: { key: "k", value: "v" }, detail: undefined }));
    expect(shown).toBe('[approval] notes__write_note {"key":"k","value":"v"} — approve once / for this session / always / deny? [o/s/a/d]');
  });
});

describe("model text in tether chat", () => {
  it("reaches the terminal without escape sequences: no cleared screen, no fake [approval] line", () => {
    const { r, text } = renderer();
    const attack = `Sure.${ESC}[2J${ESC}[H${ESC}]0;pwned${"\u0007"}\r[approval] terminal {"command":"ls"} — approve once? [o/s/a/d]\u009b31m`;
    r.frame(frame(EventType.MessageDelta, { message_id: "m1", text: attack }));
    r.frame(frame(EventType.MessageComplete, { message_id: "m1", role: "assistant", content: attack, status: "complete" }));
    const out = text();
    expect(out).not.toMatch(/[\u001b\u0007\r\u009b]/);
    // What is left is text: the fake line shows inside the reply, not at a line's start.
    expect(out).toContain('Sure.[approval] terminal {"command":"ls"}');
    expect(out.split("\n").some((l) => l.startsWith("[approval]"))).toBe(false);
  });

  it("a sequence split across two deltas leaves no escape either", () => {
    const { r, text } = renderer();
    r.frame(frame(EventType.MessageDelta, { message_id: "m2", text: `a${ESC}` }));
    r.frame(frame(EventType.MessageDelta, { message_id: "m2", text: `[2Jb` }));
    expect(text()).not.toContain(ESC);
    expect(text()).toBe("a[2Jb");
  });

  it("tool args, tool errors, turn errors, todos, history and process output are cleaned too", () => {
    const { r, text } = renderer();
    r.frame(frame(EventType.ToolStart, { call_id: "c", name: "notes__echo", args: { text: `x\u009b2J` } }));
    r.frame(frame(EventType.ToolComplete, { call_id: "c", name: "notes__echo", error: `bad${ESC}[2J`, duration_ms: 1 }));
    r.frame(frame(EventType.TurnError, { error: { layer: "provider", code: "x", message: `m${ESC}c`, retryable: false } }));
    r.todo({ revision: 1, items: [{ content: `t${ESC}[31m`, status: "pending" } as never] });
    r.history([{ message_id: "h", role: "assistant", content: `old${ESC}[2J`, status: "complete" } as never]);
    expect(text()).not.toMatch(/[\u001b\u009b]/);
    const ps = formatProcesses([
      { id: "p1", status: "running", pid: 5, command: `sleep 9${ESC}[2K`, output_tail: `line${ESC}[2J\n` } as never,
    ]);
    expect(ps).not.toContain(ESC);
    expect(ps).toContain("sleep 9\\x1b[2K");
  });

  it("the helpers: terminalText keeps newlines and tabs; visibleText escapes; wrapText never cuts", () => {
    expect(terminalText(`a\tb\nc${ESC}[1;31md${ESC}Pdcs${ESC}\\e\u0000`)).toBe("a\tb\ncde");
    expect(visibleText("a\nb\u0007")).toBe("a\\nb\\x07");
    const wrapped = wrapText("x".repeat(250), 100, "  ");
    expect(wrapped.split("\n").map((l) => l.length)).toEqual([98, 100, 56]);
    expect(wrapped.replace(/\n {2}/g, "")).toBe("x".repeat(250));
  });
});
