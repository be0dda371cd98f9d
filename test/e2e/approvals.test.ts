/**
 * Durable approvals over the wire (WebSocket and the sessions API), against a real gateway and the
 * SDK-built MCP test server: a tool whose policy is `ask` opens a request, the turn parks, and any
 * viewer answers it — once, for the session, always, or deny. First answer wins.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { eventually, readLog, stdioTestServer, tempLog } from "../support/mcp-fixture.js";

const log = tempLog();
let srv: TestServer;
const KEYS = { "k-alice": "alice", "k-bob": "bob" };

beforeAll(async () => {
  srv = await startTestServer({
    demoDelayMs: 0,
    config: { auth: { keys: KEYS }, mcp_servers: { notes: stdioTestServer({ MCP_TEST_LOG: log }) }, tools: { policy: { notes__ask_user: "auto" } } },
  });
});
afterAll(async () => {
  await srv?.close();
});

const open = (key = "k-alice") => RpcSocket.open(`${srv.wsUrl}?token=${key}`);
const writes = (key: string) => readLog(log).filter((e) => e.tool === "write_note" && e.key === key).length;

/** Starts a turn that calls notes__write_note (policy ask) and waits for its request. */
async function askToWrite(sock: RpcSocket, key: string, sessionId?: string) {
  const session_id = sessionId ?? (await sock.call("session.create", {})).session_id;
  const sub = await sock.call("prompt.submit", { session_id, text: `call: notes__write_note {"key": "${key}", "value": "v"}` });
  const opened = await sock.waitForEvent(session_id, (f) => f.type === "request.opened" && f.turn_id === sub.turn_id, 20_000);
  return { session_id, turn_id: sub.turn_id as string, request: opened.payload };
}

const turnDone = (sock: RpcSocket, sessionId: string, turnId: string) =>
  sock.waitForEvent(sessionId, (f) => f.type === "turn.complete" && f.payload.turn_id === turnId, 20_000);

describe("an approval request", () => {
  it("an MCP tool the server marks readOnlyHint: true still asks (#27: the server is untrusted), and runs only once approved", async () => {
    const a = await open();
    const session_id = (await a.call("session.create", {})).session_id;
    const sub = await a.call("prompt.submit", { session_id, text: 'call: notes__echo {"text": "a hint is not a grant"}' });
    const opened = await a.waitForEvent(session_id, (f) => f.type === "request.opened" && f.turn_id === sub.turn_id, 20_000);
    expect(opened.payload).toMatchObject({ kind: "approval", tool: "notes__echo", args: { text: "a hint is not a grant" } });
    expect(readLog(log).filter((e) => e.tool === "echo" && e.text === "a hint is not a grant")).toHaveLength(0);
    await a.call("request.respond", { session_id, request_id: opened.payload.request_id, choice: "once" });
    await turnDone(a, session_id, sub.turn_id);
    expect(readLog(log).filter((e) => e.tool === "echo" && e.text === "a hint is not a grant")).toHaveLength(1);
    a.close();
  });

  it("opens with the call's tool and args, parks the turn, and is answered by a second viewer", async () => {
    const a = await open();
    const { session_id, turn_id, request } = await askToWrite(a, "k1");
    expect(request).toMatchObject({ kind: "approval", tool: "notes__write_note", args: { key: "k1", value: "v" }, choices: ["once", "session", "always", "deny"] });
    expect(request.request_id).toMatch(/^req_/);
    // The request is durable with the assistant message: message.complete (with the call) comes just before it.
    const frames = a.sessionEvents(session_id);
    const at = frames.findIndex((f) => f.type === "request.opened");
    expect(frames[at - 1]).toMatchObject({ type: "message.complete", payload: { tool_calls: [{ id: request.call_id, name: "notes__write_note" }] } });
    expect(frames.some((f) => f.type === "turn.complete" && f.turn_id === turn_id)).toBe(false);
    expect(writes("k1")).toBe(0);

    const b = await open();
    const snap = await b.call("session.resume", { session_id });
    expect(snap.open_requests).toEqual([expect.objectContaining({ request_id: request.request_id, kind: "approval", turn_id, tool: "notes__write_note" })]);
    expect(await b.call("request.respond", { session_id, request_id: request.request_id, choice: "once" })).toEqual({
      request_id: request.request_id,
      status: "resolved",
      choice: "once",
      by: "alice",
    });
    const done = await turnDone(a, session_id, turn_id);
    expect(done.payload.status).toBe("complete");
    expect(a.sessionEvents(session_id).find((f) => f.type === "request.resolved")!.payload).toEqual({ request_id: request.request_id, choice: "once", by: "alice" });
    expect(writes("k1")).toBe(1);
    const reply = a.sessionEvents(session_id).filter((f) => f.type === "message.complete" && f.payload.role === "assistant").at(-1)!;
    expect(reply.payload.content).toBe("notes__write_note returned: wrote k1");
    expect((await b.call("session.resume", { session_id })).open_requests).toEqual([]);
    a.close();
    b.close();
  });

  it("two viewers racing: the first answer wins, the second gets 4012 with the resolution", async () => {
    const a = await open();
    const b = await open();
    const { session_id, request } = await askToWrite(a, "race");
    await b.call("session.resume", { session_id });
    const [x, y] = await Promise.all([
      a.request("request.respond", { session_id, request_id: request.request_id, choice: "deny" }),
      b.request("request.respond", { session_id, request_id: request.request_id, choice: "once" }),
    ]);
    const [won, lost] = x.error ? [y, x] : [x, y];
    expect(won.result).toMatchObject({ status: "resolved" });
    expect(lost.error).toMatchObject({ code: 4012, data: { resolution: { request_id: request.request_id, choice: won.result.choice, by: "alice" } } });
    await eventually(() => a.sessionEvents(session_id).some((f) => f.type === "turn.complete"), 20_000, "the turn");
    expect(a.sessionEvents(session_id).filter((f) => f.type === "request.resolved")).toHaveLength(1);
    expect(writes("race")).toBe(won.result.choice === "once" ? 1 : 0);
    a.close();
    b.close();
  });

  it("deny: the model gets a tool error saying so, and the tool never runs", async () => {
    const a = await open();
    const { session_id, turn_id, request } = await askToWrite(a, "denied");
    await a.call("request.respond", { session_id, request_id: request.request_id, choice: "deny", note: "not today" });
    await turnDone(a, session_id, turn_id);
    const complete = a.sessionEvents(session_id).find((f) => f.type === "tool.complete")!;
    expect(complete.payload.error_info).toMatchObject({ layer: "tool", code: "denied" });
    expect(complete.payload.error).toMatch(/denied by the user: not today/);
    expect(writes("denied")).toBe(0);
    a.close();
  });

  it("survives a reload: a new connection sees the open request in its Snapshot and answers it", async () => {
    const a = await open();
    const { session_id, turn_id, request } = await askToWrite(a, "reload");
    a.close();
    await a.closed;
    const again = await open();
    const snap = await again.call("session.resume", { session_id });
    expect(snap.open_requests.map((r: { request_id: string }) => r.request_id)).toEqual([request.request_id]);
    await again.call("request.respond", { session_id, request_id: request.request_id, choice: "once" });
    await turnDone(again, session_id, turn_id);
    expect(writes("reload")).toBe(1);
    again.close();
  });

  it("`session` covers later calls of that tool in the session only; `always` covers the profile until revoked", async () => {
    const a = await open();
    const first = await askToWrite(a, "s1");
    await a.call("request.respond", { session_id: first.session_id, request_id: first.request.request_id, choice: "session" });
    await turnDone(a, first.session_id, first.turn_id);
    const sub = await a.call("prompt.submit", { session_id: first.session_id, text: 'call: notes__write_note {"key": "s2", "value": "v"}' });
    await turnDone(a, first.session_id, sub.turn_id);
    expect(a.sessionEvents(first.session_id).filter((f) => f.type === "request.opened")).toHaveLength(1);
    expect(writes("s2")).toBe(1);

    const other = await askToWrite(a, "a1");
    await a.call("request.respond", { session_id: other.session_id, request_id: other.request.request_id, choice: "always" });
    await turnDone(a, other.session_id, other.turn_id);
    expect((await a.call("approvals.list", {})).approvals).toEqual([expect.objectContaining({ tool: "notes__write_note", by: "alice" })]);
    const third = await a.call("session.create", {});
    const t = await a.call("prompt.submit", { session_id: third.session_id, text: 'call: notes__write_note {"key": "a2", "value": "v"}' });
    await turnDone(a, third.session_id, t.turn_id);
    expect(a.sessionEvents(third.session_id).some((f) => f.type === "request.opened")).toBe(false);
    expect(writes("a2")).toBe(1);

    // Another principal is not covered by alice's `always`, and does not see it.
    const bob = await open("k-bob");
    expect((await bob.call("approvals.list", {})).approvals).toEqual([]);
    const bobs = await askToWrite(bob, "b1");
    expect(bobs.request.kind).toBe("approval");
    await bob.call("request.respond", { session_id: bobs.session_id, request_id: bobs.request.request_id, choice: "deny" });

    expect(await a.call("approvals.revoke", { tool: "notes__write_note" })).toEqual({ revoked: true });
    expect((await a.call("approvals.list", {})).approvals).toEqual([]);
    const after = await askToWrite(a, "a3");
    expect(after.request.kind).toBe("approval");
    await a.call("request.respond", { session_id: after.session_id, request_id: after.request.request_id, choice: "deny" });
    a.close();
    bob.close();
  });

  it("session.interrupt resolves open requests as cancelled and ends the turn interrupted", async () => {
    const a = await open();
    const { session_id, turn_id, request } = await askToWrite(a, "int");
    expect(await a.call("session.interrupt", { session_id })).toEqual({ status: "interrupted" });
    const done = await turnDone(a, session_id, turn_id);
    expect(done.payload.status).toBe("interrupted");
    expect(a.sessionEvents(session_id).find((f) => f.type === "request.resolved")!.payload).toMatchObject({ request_id: request.request_id, by: "alice", reason: "cancelled" });
    const late = await a.request("request.respond", { session_id, request_id: request.request_id, choice: "once" });
    expect(late.error).toMatchObject({ code: 4012 });
    expect(writes("int")).toBe(0);
    // The next prompt runs normally: the history has a result for every call.
    const next = await a.call("prompt.submit", { session_id, text: "count to 3" });
    expect((await turnDone(a, session_id, next.turn_id)).payload.status).toBe("complete");
    a.close();
  });

  it("bad answers: unknown request 4011, a choice the kind does not take -32602, another principal's session 4007", async () => {
    const a = await open();
    const { session_id, request } = await askToWrite(a, "bad");
    expect((await a.request("request.respond", { session_id, request_id: "req_nope", choice: "once" })).error).toMatchObject({ code: 4011 });
    expect((await a.request("request.respond", { session_id, request_id: request.request_id, choice: "accept" })).error).toMatchObject({ code: -32602 });
    const bob = await open("k-bob");
    expect((await bob.request("request.respond", { session_id, request_id: request.request_id, choice: "once" })).error).toMatchObject({ code: 4007 });
    await a.call("request.respond", { session_id, request_id: request.request_id, choice: "deny" });
    a.close();
    bob.close();
  });

  it("MCP elicitation opens a request of kind input, answered with content", async () => {
    const a = await open();
    const { session_id } = await a.call("session.create", {});
    const sub = await a.call("prompt.submit", { session_id, text: 'call: notes__ask_user {"question": "favourite colour?"}' });
    const opened = await a.waitForEvent(session_id, (f) => f.type === "request.opened", 20_000);
    expect(opened.payload).toMatchObject({ kind: "input", server: "notes", message: "favourite colour?", choices: ["accept", "decline", "cancel"] });
    expect(opened.payload.schema).toMatchObject({ type: "object", properties: { answer: { type: "string" } } });
    await a.call("request.respond", { session_id, request_id: opened.payload.request_id, content: { answer: "blue" } });
    await turnDone(a, session_id, sub.turn_id);
    const reply = a.sessionEvents(session_id).filter((f) => f.type === "message.complete" && f.payload.role === "assistant").at(-1)!;
    expect(reply.payload.content).toBe("notes__ask_user returned: the user answered: blue");
    a.close();
  });
});

describe("the sessions API", () => {
  it("GET /api/sessions/{id} lists open requests; POST …/requests/{id} answers; a second answer is 409", async () => {
    const a = await open();
    const { session_id, turn_id, request } = await askToWrite(a, "http");
    const headers = { authorization: "Bearer k-alice", "content-type": "application/json" };
    const got = await (await fetch(`${srv.url}/api/sessions/${session_id}`, { headers })).json();
    expect(got.open_requests).toEqual([expect.objectContaining({ request_id: request.request_id, kind: "approval" })]);
    const url = `${srv.url}/api/sessions/${session_id}/requests/${request.request_id}`;
    const first = await fetch(url, { method: "POST", headers, body: JSON.stringify({ choice: "once" }) });
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ status: "resolved", choice: "once", by: "alice" });
    const second = await fetch(url, { method: "POST", headers, body: JSON.stringify({ choice: "deny" }) });
    expect(second.status).toBe(409);
    expect((await second.json()).error).toMatchObject({ code: "request_already_resolved", resolution: { choice: "once", by: "alice" } });
    const bob = await fetch(url, { method: "POST", headers: { ...headers, authorization: "Bearer k-bob" }, body: JSON.stringify({ choice: "once" }) });
    expect(bob.status).toBe(404);
    await turnDone(a, session_id, turn_id);
    expect(writes("http")).toBe(1);
    a.close();
  });
});
