/** `tether chat` and approvals: the question is printed, the next line answers it; /resume shows it again. */
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runChat } from "../../src/cli/chat.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { readLog, stdioTestServer, tempLog } from "../support/mcp-fixture.js";

const log = tempLog();
let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 0, config: { mcp_servers: { notes: stdioTestServer({ MCP_TEST_LOG: log }) } } });
});
afterAll(async () => {
  await srv?.close();
});

async function chat(script: string, sessionId?: string): Promise<string> {
  const input = new PassThrough();
  const output = new PassThrough();
  let text = "";
  output.on("data", (d: Buffer) => (text += d.toString()));
  input.end(script);
  await runChat({ url: srv.wsUrl, sessionId, input, output });
  return text;
}

describe("tether chat approvals", () => {
  it("asks approve once / for this session / always / deny, and the next line answers", async () => {
    const text = await chat('call: notes__write_note {"key": "chat1", "value": "v"}\no\n');
    expect(text).toMatch(/\[approval\] notes__write_note \{"key":"chat1","value":"v"\} — approve once \/ for this session \/ always \/ deny\? \[o\/s\/a\/d\]/);
    expect(text).toContain("notes__write_note returned: wrote chat1");
    expect(readLog(log).filter((e) => e.tool === "write_note" && e.key === "chat1")).toHaveLength(1);
  });

  it("shows an open request again after /resume and answers it there", async () => {
    const first = await chat('call: notes__write_note {"key": "chat2", "value": "v"}\n');
    const id = /session (\S+) \(/.exec(first)![1]!;
    expect(first).toContain("[approval] notes__write_note");
    expect(readLog(log).filter((e) => e.key === "chat2")).toHaveLength(0);
    const text = await chat(`/resume ${id}\nd not now\n`);
    expect(text).toContain(`resumed ${id}`);
    expect(text).toContain("[approval] notes__write_note");
    expect(text).toMatch(/notes__write_note returned: \{"error":"denied by the user: not now"\}/);
    expect(readLog(log).filter((e) => e.key === "chat2")).toHaveLength(0);
  });
});
