/** `tether chat` and `tether sessions list` driven through streams against the real gateway. */
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runChat } from "../../src/cli/chat.js";
import { ChatRenderer } from "../../src/cli/chat-render.js";
import { normalizeGatewayUrl } from "../../src/cli/gateway-url.js";
import { styleFor } from "../../src/cli/terminal-style.js";
import { runSessionsList } from "../../src/cli/sessions-list.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

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

  it("an auth failure says the gateway needs a key and how to pass it, and is not labelled retryable", async () => {
    const before = process.exitCode;
    const none = collect();
    await runChat({ url: srv.wsUrl, input: new PassThrough(), output: none.stream });
    expect(none.text()).toBe(`tether chat: the gateway at ${srv.wsUrl} needs an API key: pass --token KEY or set TETHER_API_KEY\n`);
    expect(process.exitCode).toBe(1);
    const wrong = collect();
    await runChat({ url: srv.wsUrl, token: "wrong", input: new PassThrough(), output: wrong.stream });
    expect(wrong.text()).toMatch(/refused this API key: check --token or TETHER_API_KEY/);
    expect(wrong.text()).not.toContain("retryable");
    const list = collect();
    await runSessionsList({ url: srv.wsUrl, output: list.stream });
    expect(list.text()).toMatch(/^tether: the gateway at .* needs an API key: pass --token KEY or set TETHER_API_KEY\n$/);
    process.exitCode = before;
  });

  it("--url takes what users paste: http://HOST:PORT (what serve prints), HOST:PORT, ws://HOST:PORT", async () => {
    const hostPort = srv.url.replace(/^http:\/\//, "");
    expect(normalizeGatewayUrl(srv.url)).toBe(srv.wsUrl);
    expect(normalizeGatewayUrl(hostPort)).toBe(srv.wsUrl);
    expect(normalizeGatewayUrl(`ws://${hostPort}`)).toBe(srv.wsUrl);
    expect(normalizeGatewayUrl(`${srv.url}/`)).toBe(srv.wsUrl);
    expect(normalizeGatewayUrl(srv.wsUrl)).toBe(srv.wsUrl);
    expect(normalizeGatewayUrl("https://gw.example/tether/")).toBe("wss://gw.example/tether/ws");
    for (const url of [srv.url, hostPort, `ws://${hostPort}`]) {
      const input = new PassThrough();
      const out = collect();
      input.end("count to 2\n");
      await runChat({ url, token: "k-chat", input, output: out.stream });
      expect(out.text()).toMatch(/\n1 2\n/);
    }
    // Still wrong: one line naming what was expected, exit code 2, no stack trace.
    const before = process.exitCode;
    for (const bad of ["ftp://127.0.0.1:8787", "http://", "not a url at all"]) {
      const out = collect();
      await runChat({ url: bad, input: new PassThrough(), output: out.stream });
      expect(out.text()).toBe(`tether chat: not a gateway URL: "${bad}" (expected ws://HOST:PORT/ws, http://HOST:PORT or HOST:PORT)\n`);
      expect(process.exitCode).toBe(2);
    }
    process.exitCode = before;
  });

  it("/resume shows an interrupted reply as interrupted and a failed turn with its error", async () => {
    const slow = await startTestServer({ demoDelayMs: 5 });
    try {
      const input = Object.assign(new PassThrough(), { isTTY: true });
      const out = collect();
      const done = runChat({ url: slow.wsUrl, input, output: out.stream });
      await waitForText(out.text, "/help for commands");
      const id = /session (\S+) \(/.exec(out.text())![1]!;
      input.write("count to 1000\r");
      await waitForText(out.text, " 20 ");
      input.write("\x03");
      await waitForText(out.text, "(turn interrupted)");
      input.write("fail: auth/unauthorized\r");
      await waitForText(out.text, "[auth/unauthorized]");
      input.write("/quit\r");
      await done;

      const again = collect();
      const next = new PassThrough();
      next.end("/quit\n");
      await runChat({ url: slow.wsUrl, sessionId: id, input: next, output: again.stream });
      const history = again.text();
      expect(history).toMatch(/^1 2 3 4 5 .* \(interrupted\)$/m);
      expect(history).toMatch(/^> fail: auth\/unauthorized\n\[auth\/unauthorized\] demo provider: simulated failure auth\/unauthorized$/m);
    } finally {
      await slow.close();
    }
  });
});

describe("the chat renderer after a gateway crash", () => {
  it("never prints a reply twice: text the server no longer has is marked as lost", () => {
    const out = collect();
    const render = new ChatRenderer(out.stream, styleFor(out.stream));
    const count = (n: number) => Array.from({ length: n }, (_, i) => i + 1).join(" ");
    const frame = (type: string, payload: Record<string, unknown>) => ({ type, session_id: "s", seq: 1, epoch: "e", ts: 0, payload }) as never;
    render.frame(frame("message.start", { message_id: "m1", role: "assistant" }));
    for (let i = 1; i <= 94; i++) render.frame(frame("message.delta", { message_id: "m1", text: i === 1 ? "1" : ` ${i}` }));
    render.status({ state: "reconnecting", attempt: 1, delayMs: 100, reason: "socket closed" } as never);
    render.status({ state: "connected", reconnected: true, restarted: true } as never);
    // The restarted gateway completes the message from its last checkpoint: up to "87".
    render.frame(frame("message.complete", { message_id: "m1", role: "assistant", content: count(87), status: "interrupted" }));
    const text = out.text();
    expect(text.split(count(87)).length).toBe(2); // "1 … 87" appears once: no reprint
    expect(text).toContain(count(94));
    expect(text).toMatch(/\[the last \d+ characters shown were lost when the gateway stopped\]/);
    expect(text).toContain("(interrupted)");
    expect(text.match(/^1 2 3 /gm)).toHaveLength(1);
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

describe("a session the gateway reaped, in the terminal", () => {
  it("tether sessions list and /sessions show it as idle (it resumes on open), not gone", async () => {
    const first = await chat("count to 1\n");
    const id = /session (\S+) \(/.exec(first)![1]!;
    const rt = [...sessionRooms(srv.server.manager).registry.values()].find((r) => r.id === id);
    if (rt) await sessionRooms(srv.server.manager).ending.end(rt, "orphan_reap", { broadcast: true });
    const out = collect();
    await runSessionsList({ url: srv.wsUrl, token: "k-chat", output: out.stream });
    const row = out.text().split("\n").find((l) => l.startsWith(id))!;
    expect(row).toMatch(/idle \(resumes on open\)/);
    expect(row).toContain("count to 1"); // titled by its first prompt
    const inChat = await chat("/sessions\n");
    expect(inChat.split("\n").find((l) => l.includes(id))).toMatch(/idle \(resumes on open\)/);
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
