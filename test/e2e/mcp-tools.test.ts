/**
 * MCP tools end to end in real turns: a real gateway (in-process, real sockets, real SQLite), the
 * demo provider's `call:` cue as the model, the SDK-built test server over stdio and the
 * published filesystem server as tool sources, and one server that cannot start.
 */
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { eventually, filesystemServer, readLog, stdioTestServer, tempLog } from "../support/mcp-fixture.js";

const dir = mkdtempSync(join(tmpdir(), "tether-mcp-e2e-"));
const log = tempLog();
let srv: TestServer;
let sock: RpcSocket;

const baseConfig = {
  mcp_servers: {
    notes: stdioTestServer({ MCP_TEST_LOG: log }),
    files: filesystemServer(dir),
    broken: { command: "/nonexistent/mcp-server" },
  },
  // Every MCP tool asks unless the operator says otherwise (#27): the reads these tests call, by name.
  tools: {
    policy: {
      "notes__write_note": "auto" as const,
      "notes__crash": "deny" as const,
      "notes__echo": "auto" as const,
      "notes__read_note": "auto" as const,
      "notes__fail": "auto" as const,
      "notes__huge": "auto" as const,
      "notes__slow": "auto" as const,
      "notes2__echo": "auto" as const,
      "files__read_*": "auto" as const,
    },
  },
  profiles: { quick: { db: join(dir, "quick.db"), tools: { timeout_s: 0.3 } } },
};

beforeAll(async () => {
  writeFileSync(join(dir, "a.txt"), "contents of a");
  srv = await startTestServer({ demoDelayMs: 0, config: baseConfig });
  sock = await RpcSocket.open(srv.wsUrl);
});
afterAll(async () => {
  sock?.close();
  await srv?.close();
});

async function turn(text: string, profile?: string) {
  const snap = await sock.call("session.create", profile ? { profile } : {});
  const sub = await sock.call("prompt.submit", { session_id: snap.session_id, text, ...(profile ? { profile } : {}) });
  const done = await sock.waitForEvent(snap.session_id, (f) => f.type === "turn.complete" && f.payload.turn_id === sub.turn_id, 20_000);
  const frames = sock.sessionEvents(snap.session_id).filter((f) => f.turn_id === sub.turn_id);
  const reply = frames.filter((f) => f.type === "message.complete" && f.payload.role === "assistant").at(-1)!.payload.content as string;
  return { sessionId: snap.session_id as string, done, frames, reply, of: (type: string) => frames.filter((f) => f.type === type) };
}

describe("MCP tools in a real turn", () => {
  it("calls an auto MCP tool, feeds its result back to the model, and notes the server that is down", async () => {
    const t = await turn('call: notes__echo {"text":"hello mcp"}');
    expect(t.done.payload.status).toBe("complete");
    expect(t.of("tool.start")[0]!.payload).toMatchObject({ name: "notes__echo", args: { text: "hello mcp" } });
    expect(t.of("tool.complete")[0]!.payload).toMatchObject({ name: "notes__echo", result: { content: "hello mcp" } });
    expect(t.of("tool.complete")[0]!.payload.error).toBeUndefined();
    expect(t.reply).toBe("notes__echo returned: hello mcp");
    const notices = t.of("session.notice");
    expect(notices.map((n) => [n.payload.code, n.payload.server])).toEqual([["mcp_unavailable", "broken"]]);
    expect(notices[0]!.payload.message).toMatch(/MCP server "broken" is unavailable/);
    // Durable: the notice is in the store, so a catch-up from 0 replays it.
    const since = await sock.call("session.events.since", { session_id: t.sessionId, after_seq: 0, include_transient: false });
    expect(since.events.filter((f: any) => f.type === "session.notice").map((f: any) => f.payload.server)).toEqual(["broken"]);
  });

  it("runs several calls of one step, across servers, with the published filesystem server", async () => {
    const t = await turn(`call: files__read_text_file {"path": ${JSON.stringify(join(dir, "a.txt"))}}; notes__read_note {"key": "greeting"}`);
    expect(t.of("tool.complete").map((f) => f.payload.name)).toEqual(["files__read_text_file", "notes__read_note"]);
    expect(t.reply).toContain("files__read_text_file returned: contents of a");
    expect(t.reply).toContain("notes__read_note returned: note greeting: hello");
  });

  it("an isError result is a tool error with a classified error_info, and the turn completes", async () => {
    const t = await turn('call: notes__fail {"message": "no such note"}');
    expect(t.of("tool.complete")[0]!.payload).toMatchObject({
      error: "no such note",
      error_info: { layer: "tool", code: "tool_error", retryable: false, message: "no such note" },
    });
    expect(t.done.payload.status).toBe("complete");
    expect(t.reply).toBe('notes__fail returned: {"error":"no such note"}');
  });

  it("policy: a denied tool is not offered; an `ask` tool waits for an approval and is not run when denied", async () => {
    const denied = await turn("call: notes__crash {}");
    expect(denied.of("tool.start")).toHaveLength(0);
    expect(denied.reply).toBe("Not available in this turn: notes__crash.");

    // An `ask` tool waits for an approval (test/e2e/approvals.test.ts has the whole flow); denied, it never runs.
    const target = join(dir, "written.txt");
    const snap = await sock.call("session.create", {});
    const sub = await sock.call("prompt.submit", { session_id: snap.session_id, text: `call: files__write_file {"path": ${JSON.stringify(target)}, "content": "x"}` });
    const opened = await sock.waitForEvent(snap.session_id, (f) => f.type === "request.opened", 20_000);
    expect(opened.payload).toMatchObject({ kind: "approval", tool: "files__write_file", server: "files" });
    await sock.call("request.respond", { session_id: snap.session_id, request_id: opened.payload.request_id, choice: "deny" });
    await sock.waitForEvent(snap.session_id, (f) => f.type === "turn.complete" && f.turn_id === sub.turn_id, 20_000);
    expect(sock.sessionEvents(snap.session_id).find((f) => f.type === "tool.complete")!.payload.error_info).toMatchObject({ layer: "tool", code: "denied" });
    expect(existsSync(target)).toBe(false);

    // `notes__write_note` is made auto by config: it runs.
    const auto = await turn('call: notes__write_note {"key": "k", "value": "v"}');
    expect(auto.of("tool.complete")[0]!.payload.error).toBeUndefined();
    expect(readLog(log).filter((e) => e.tool === "write_note")).toHaveLength(1);
  });

  it("a 5 MB answer reaches the store and the viewers cut to tools.max_result_bytes (1 MiB by default), saying so", async () => {
    const t = await turn('call: notes__huge {"bytes": 5000000}');
    expect(t.done.payload.status).toBe("complete");
    const complete = t.of("tool.complete")[0]!;
    expect(Buffer.byteLength(JSON.stringify(complete.payload))).toBeLessThanOrEqual(1024 * 1024 + 1024);
    expect(complete.payload.result.content).toMatch(/\[… cut: \d+ of 5000000 bytes left out \(tools\.max_result_bytes is 1048576\)\]$/);
    const db = new Database(srv.dbPath, { readonly: true });
    try {
      const stored = db.prepare("SELECT length(CAST(content AS BLOB)) AS n FROM messages WHERE session_id = ? AND role = 'tool'").all(t.sessionId) as Array<{ n: number }>;
      const events = db.prepare("SELECT max(length(CAST(payload AS BLOB))) AS n FROM events WHERE session_id = ?").get(t.sessionId) as { n: number };
      expect(stored.map((r) => r.n <= 1024 * 1024)).toEqual([true]);
      expect(events.n).toBeLessThanOrEqual(1024 * 1024 + 1024);
    } finally {
      db.close();
    }
  });

  it("session.interrupt during a call cancels it on the server and ends the turn interrupted", async () => {
    const snap = await sock.call("session.create", {});
    const sub = await sock.call("prompt.submit", { session_id: snap.session_id, text: 'call: notes__slow {"ms": 60000}' });
    await sock.waitForEvent(snap.session_id, (f) => f.type === "tool.start" && f.turn_id === sub.turn_id);
    await eventually(() => readLog(log).some((e) => e.tool === "slow" && e.event === "start"), 10_000, "the call to reach the server");
    expect(await sock.call("session.interrupt", { session_id: snap.session_id })).toEqual({ status: "interrupted" });
    const done = await sock.waitForEvent(snap.session_id, (f) => f.type === "turn.complete" && f.turn_id === sub.turn_id);
    expect(done.payload.status).toBe("interrupted");
    const complete = sock.sessionEvents(snap.session_id).find((f) => f.type === "tool.complete")!;
    expect(complete.payload.error_info).toMatchObject({ code: "interrupted" });
    await eventually(() => readLog(log).some((e) => e.tool === "slow" && e.event === "cancelled"), 10_000, "the server to see the cancellation");
  });

  it("tools.timeout_s of the profile cancels a call that runs too long: a retryable tool error, the turn goes on", async () => {
    const t = await turn('call: notes__slow {"ms": 30000}', "quick");
    expect(t.of("tool.complete")[0]!.payload.error_info).toMatchObject({ layer: "tool", code: "timeout", retryable: true });
    expect(t.done.payload.status).toBe("complete");
    expect(t.reply).toMatch(/notes__slow returned: \{"error":"the tool ran longer than 0.3 s/);
  });

  it("live reload: a server added to the config is offered at the next turn, a removed one is gone", async () => {
    const next = resolveConfig({}, {
      host: "127.0.0.1",
      port: 0,
      dbPath: srv.dbPath,
      demo: { delayMs: 0 },
      ...baseConfig,
      mcp_servers: { notes2: stdioTestServer() },
    });
    srv.server.applyConfig(next);
    const t = await turn('call: notes2__echo {"text": "new"}; notes__echo {"text": "old"}');
    expect(t.reply).toBe("notes2__echo returned: new\nNot available in this turn: notes__echo.");
    expect(t.of("session.notice")).toHaveLength(0);
  });
});
