/** `tether chat`'s `/ps` and `/kill ID` against a real gateway running a real background process. */
import { PassThrough } from "node:stream";
import { mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runChat } from "../../src/cli/chat.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

const work = realpathSync(mkdtempSync(join(tmpdir(), "tether-chat-ps-")));
let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ config: { tools: { workspace: { roots: [work] }, policy: { terminal: "auto" } } } as never });
});
afterAll(async () => {
  await srv.close();
});

async function chat(script: string, sessionId: string): Promise<string> {
  const input = new PassThrough();
  const output = new PassThrough();
  let text = "";
  output.on("data", (c: Buffer) => (text += c.toString()));
  input.end(script);
  await runChat({ url: srv.wsUrl, sessionId, input, output });
  return text;
}

describe("tether chat /ps and /kill", () => {
  it("lists the session's background processes and stops one", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id } = await sock.call("session.create", { cwd: work });
    const sub = await sock.call("prompt.submit", { session_id, text: `call: terminal {"command": "echo serving; sleep 60", "background": true}` });
    const started = await sock.waitForEvent(session_id, (f) => f.type === "process.started", 20_000);
    await sock.waitForEvent(session_id, (f) => f.type === "turn.complete" && f.payload.turn_id === sub.turn_id, 20_000);
    const { id, pid } = started.payload;
    // Wait until its first line of output is captured.
    for (let i = 0; i < 100 && !(await sock.call("process.output", { session_id, id })).output; i++) await new Promise((r) => setTimeout(r, 20));

    const text = await chat(`/ps\n/kill ${id}\n/ps\n/kill proc_nope\n/kill\n`, session_id);
    const lines = text.split("\n");
    expect(lines.some((l) => l.startsWith(`${id}  running  pid ${pid}  echo serving; sleep 60`))).toBe(true);
    expect(text).toContain("… serving");
    expect(text).toContain(`${id} killed`);
    expect(lines.some((l) => l.startsWith(`${id}  killed (SIGTERM)  pid ${pid}`))).toBe(true);
    expect(text).toMatch(/error: .*No such process in this session: proc_nope/);
    expect(text).toContain("usage: /kill ID");
    sock.close();
  });
});
