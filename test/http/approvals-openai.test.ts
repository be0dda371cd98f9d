/**
 * Approvals over the OpenAI-compatible API, with the official `openai` client: a Response that
 * needs approval ends with `mcp_approval_request` items and is answered by `mcp_approval_response`
 * input items on a request with `previous_response_id`; a streamed chat completion waits (with SSE
 * keep-alive comments) while the request is answered from another surface of the session.
 */
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { readLog, stdioTestServer, tempLog } from "../support/mcp-fixture.js";

const log = tempLog();
let srv: TestServer;
let ai: OpenAI;

beforeAll(async () => {
  srv = await startTestServer({
    demoDelayMs: 0,
    config: { mcp_servers: { notes: stdioTestServer({ MCP_TEST_LOG: log }) }, http: { sse_keepalive_ms: 50 } },
  });
  ai = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
afterAll(async () => {
  await srv?.close();
});

const writes = (key: string) => readLog(log).filter((e) => e.tool === "write_note" && e.key === key).length;

describe("Responses: mcp_approval_request / mcp_approval_response", () => {
  it("a pending approval ends the response with an mcp_approval_request; approving continues the turn", async () => {
    const first = await ai.responses.create({ model: "demo", input: 'call: notes__write_note {"key": "r1", "value": "v"}' });
    expect(first.status).toBe("completed");
    const asks = first.output.filter((o): o is OpenAI.Responses.ResponseOutputItem.McpApprovalRequest => o.type === "mcp_approval_request");
    expect(asks).toHaveLength(1);
    expect(asks[0]).toMatchObject({ server_label: "notes", name: "write_note" });
    expect(JSON.parse(asks[0]!.arguments)).toEqual({ key: "r1", value: "v" });
    expect(writes("r1")).toBe(0);

    const second = await ai.responses.create({
      model: "demo",
      previous_response_id: first.id,
      input: [{ type: "mcp_approval_response", approval_request_id: asks[0]!.id, approve: true }],
    });
    expect(second.status).toBe("completed");
    expect(second.output_text).toBe("notes__write_note returned: wrote r1");
    expect(writes("r1")).toBe(1);
  });

  it("approve: false denies it; the model reads the refusal", async () => {
    const first = await ai.responses.create({ model: "demo", input: 'call: notes__write_note {"key": "r2", "value": "v"}' });
    const ask = first.output.find((o) => o.type === "mcp_approval_request") as OpenAI.Responses.ResponseOutputItem.McpApprovalRequest;
    const second = await ai.responses.create({
      model: "demo",
      previous_response_id: first.id,
      input: [{ type: "mcp_approval_response", approval_request_id: ask.id, approve: false, reason: "no" }],
    });
    expect(second.output_text).toMatch(/^notes__write_note returned: \{"error":"denied/);
    expect(writes("r2")).toBe(0);
  });

  it("streamed: the approval request is an output item of the stream, which then completes", async () => {
    const stream = await ai.responses.create({ model: "demo", input: 'call: notes__write_note {"key": "r3", "value": "v"}', stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    const added = events.find((e) => e.type === "response.output_item.added" && e.item.type === "mcp_approval_request");
    expect(added).toBeDefined();
    expect(events.at(-1)!.type).toBe("response.completed");
  });

  it("an approval id that is not pending is a 400 naming it", async () => {
    const first = await ai.responses.create({ model: "demo", input: "count to 2" });
    await expect(
      ai.responses.create({ model: "demo", previous_response_id: first.id, input: [{ type: "mcp_approval_response", approval_request_id: "req_nope", approve: true }] }),
    ).rejects.toMatchObject({ status: 400 });
  });
});

describe("Chat Completions: the stream waits for the answer", () => {
  it("sends keep-alive comments while the request is open, and finishes once it is answered over WebSocket", async () => {
    const res = await fetch(`${srv.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "demo", stream: true, messages: [{ role: "user", content: 'call: notes__write_note {"key": "c1", "value": "v"}' }] }),
    });
    const sessionId = res.headers.get("x-session-id")!;
    expect(sessionId).toMatch(/^ses_/);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    const sock = await RpcSocket.open(srv.wsUrl);
    const snap = await sock.call("session.resume", { session_id: sessionId });
    // Wait for the request and a few keep-alives while it is open.
    let answered = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      const open = snap.open_requests[0] ?? (await sock.call("session.resume", { session_id: sessionId })).open_requests[0];
      if (!answered && open && (text.match(/: keep-alive/g) ?? []).length >= 2) {
        await sock.call("request.respond", { session_id: sessionId, request_id: open.request_id, choice: "once" });
        answered = true;
      }
    }
    expect(answered).toBe(true);
    expect(text).toContain("data: [DONE]");
    const content = text
      .split("\n")
      .filter((l) => l.startsWith("data: {"))
      .map((l) => JSON.parse(l.slice(6)).choices?.[0]?.delta?.content ?? "")
      .join("");
    expect(content).toBe("notes__write_note returned: wrote c1");
    expect(writes("c1")).toBe(1);
    sock.close();
  });
});
