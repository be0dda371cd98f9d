/** `tether chat` and `tether sessions list` driven through streams against the real gateway. */
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runChat } from "../../src/cli/chat.js";
import { runSessionsList } from "../../src/cli/sessions-list.js";
import { startTestServer, type TestServer } from "../support/start-server.js";

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 1, apiKey: "k-chat" });
});
afterAll(async () => {
  await srv.close();
});

function collect(): { stream: PassThrough; text(): string } {
  const stream = new PassThrough();
  let text = "";
  stream.on("data", (chunk: Buffer) => (text += chunk.toString()));
  return { stream, text: () => text };
}

async function chat(script: string, sessionId?: string): Promise<string> {
  const input = new PassThrough();
  const out = collect();
  input.end(script);
  await runChat({ url: srv.wsUrl, token: "k-chat", sessionId, input, output: out.stream });
  return out.text();
}

describe("tether chat (piped)", () => {
  it("runs each line as a turn, streams the reply, prints tool calls and the todo list, exits at EOF", async () => {
    const text = await chat("count to 5\ntodo: a; b\n/todo\n");
    expect(text).toContain("1 2 3 4 5");
    expect(text).toMatch(/\[tool\] todo .*\n/);
    expect(text).toMatch(/\[tool\] todo done \(\d+ ms\)/);
    expect(text).toMatch(/\[ \] a\n\s+\[ \] b/);
    // The count reply comes before the todo turn: lines are processed one after the other.
    expect(text.indexOf("1 2 3 4 5")).toBeLessThan(text.indexOf("[tool] todo"));
    expect(text).not.toMatch(/\x1b\[/); // no ANSI codes when the output is not a TTY
  });

  it("prints turn errors with layer, code and retryability", async () => {
    const text = await chat("fail: provider/rate_limited\n");
    expect(text).toMatch(/\[provider\/rate_limited\] .*\(retryable\)/);
  });

  it("handles commands: /help, /sessions, /new, /resume, unknown", async () => {
    const first = await chat("count to 2\n");
    const id = /session (\S+) \(/.exec(first)?.[1];
    expect(id).toBeTruthy();
    const text = await chat(`/help\n/sessions\n/bogus\n/new\n/resume ${id}\ncount to 3\n/quit\ncount to 9\n`);
    expect(text).toContain("/resume ID");
    expect(text).toMatch(/ID\s+STATE\s+TITLE\s+MODEL\s+MESSAGES\s+LAST ACTIVITY/);
    expect(text).toContain(id!);
    expect(text).toContain("unknown command /bogus");
    expect(text).toContain(`resumed ${id}`);
    expect(text).toContain("1 2 3");
    expect(text).not.toContain("1 2 3 4 5 6 7 8 9"); // /quit stopped the script
  });

  it("resumes a session given by --session and shows its history", async () => {
    const first = await chat("count to 4\n");
    const id = /session (\S+) \(/.exec(first)![1]!;
    const text = await chat("count to 2\n", id);
    expect(text).toContain(`resumed ${id}`);
    expect(text).toContain("1 2 3 4"); // history
    expect(text).toMatch(/> count to 2\n1 2\n/);
  });

  it("reports a connection failure and sets the exit code", async () => {
    const out = collect();
    const before = process.exitCode;
    await runChat({ url: srv.wsUrl, token: "wrong", input: new PassThrough(), output: out.stream });
    expect(out.text()).toMatch(/tether chat: cannot connect/);
    expect(process.exitCode).toBe(1);
    process.exitCode = before;
  });
});

describe("tether sessions list", () => {
  it("prints a table of sessions", async () => {
    await chat("count to 1\n");
    const out = collect();
    await runSessionsList({ url: srv.wsUrl, token: "k-chat", output: out.stream, all: true });
    const lines = out.text().trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ID\s+STATE\s+TITLE\s+MODEL\s+MESSAGES\s+LAST ACTIVITY$/);
    expect(lines.length).toBeGreaterThan(1);
    expect(out.text()).toMatch(/just now|s ago/);
  });
});

describe("tether chat across a network drop", () => {
  it("shows reconnecting / caught up and prints the reply exactly once", async () => {
    const slow = await startTestServer({ demoDelayMs: 5 });
    try {
      const input = new PassThrough();
      const out = collect();
      const done = runChat({ url: slow.wsUrl, input, output: out.stream });
      input.end("count to 200\ncount to 3\n");
      await waitForText(out.text, " 20 ");
      slow.dropConnections();
      await done;
      const text = out.text();
      expect(text).toMatch(/… reconnecting \(attempt 1/);
      expect(text).toContain("… connected, caught up");
      // Status lines break the streamed line (the text goes on below them, starting " N");
      // without them the reply reads whole, once.
      const reply = text.replace(/\n… [^\n]*/g, "").replace(/\n(?= \d)/g, "");
      const full = Array.from({ length: 200 }, (_, i) => i + 1).join(" ");
      expect(reply).toContain(`\n${full}\n`);
      expect(reply.split(" 199 200").length).toBe(2);
      expect(reply).toMatch(/> count to 3\n1 2 3\n/);
    } finally {
      await slow.close();
    }
  });
});

describe("tether chat (terminal)", () => {
  it("Ctrl-C interrupts the running turn; a second Ctrl-C exits", async () => {
    const slow = await startTestServer({ demoDelayMs: 5 });
    try {
      const input = Object.assign(new PassThrough(), { isTTY: true });
      const out = collect();
      const done = runChat({ url: slow.wsUrl, input, output: out.stream });
      await waitForText(out.text, "/help for commands");
      input.write("count to 1000\r");
      await waitForText(out.text, " 20 ");
      input.write("\x03");
      await waitForText(out.text, "(turn interrupted)");
      input.write("\x03");
      await done;
      expect(out.text()).toContain("^C interrupting");
      expect(out.text()).not.toContain("999 1000");
    } finally {
      await slow.close();
    }
  });
});

async function waitForText(text: () => string, needle: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!text().includes(needle)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${JSON.stringify(needle)} in:\n${text()}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
