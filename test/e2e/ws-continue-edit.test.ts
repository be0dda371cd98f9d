/**
 * Continue and editing a queued prompt over a real WebSocket (#33 item 6): `prompt.submit
 * { continue: true }` goes on with the cut reply in a turn with no user message; `prompt.edit`
 * changes a queued prompt's text where it waits (memory and its stored row), never its place.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

const KEYS = { "key-alice": "alice", "key-bob": "bob" };
let srv: TestServer;

beforeAll(async () => {
  // Queued prompts may hold 1,000 bytes per principal: an edit that grows one past it is refused.
  srv = await startTestServer({ demoDelayMs: 2, config: { auth: { keys: KEYS }, quotas: { max_queued_prompt_bytes: 1000 } } });
});
afterAll(async () => {
  await srv.close();
});

const open = (key = "key-alice") => RpcSocket.open(`${srv.wsUrl}?token=${key}`);
const done = (sock: RpcSocket, sid: string, turnId: string) =>
  sock.waitForEvent(sid, (f) => f.type === "turn.complete" && f.payload.turn_id === turnId, 20_000);

/** Starts `count to N` and stops it once `after` deltas arrived: the cut reply. */
async function cutCount(sock: RpcSocket, sid: string, n: number, after: number): Promise<string> {
  const sub = await sock.call("prompt.submit", { session_id: sid, text: `count to ${n}` });
  await sock.waitFor(() => sock.sessionEvents(sid).filter((f) => f.type === "message.delta" && f.turn_id === sub.turn_id).length >= after);
  await sock.call("session.interrupt", { session_id: sid });
  await done(sock, sid, sub.turn_id);
  return sub.turn_id;
}

describe("prompt.submit { continue: true }", () => {
  it("goes on with the cut reply: no user message, and the two parts read as the whole reply", async () => {
    const sock = await open();
    const { session_id: sid } = await sock.call("session.create", {});
    await cutCount(sock, sid, 400, 5);
    const sub = await sock.call("prompt.submit", { session_id: sid, continue: true, request_id: "go-on-1" });
    expect(sub.status).toBe("started");
    await done(sock, sid, sub.turn_id);
    const turn = sock.sessionEvents(sid).filter((f) => f.turn_id === sub.turn_id);
    expect(turn.some((f) => f.type === "message.start" && f.payload.role === "user")).toBe(false);

    const { messages } = await sock.call("session.messages", { session_id: sid });
    expect(messages.map((m: any) => [m.role, m.status])).toEqual([
      ["user", "complete"],
      ["assistant", "interrupted"],
      ["assistant", "complete"],
    ]);
    // The note the model was sent is nowhere in the transcript.
    expect(JSON.stringify(messages)).not.toMatch(/Continue exactly/);
    expect(messages[1].content + messages[2].content).toBe(Array.from({ length: 400 }, (_, i) => i + 1).join(" "));
    // Idempotent as any submit: the same request id is the same turn.
    const again = await sock.call("prompt.submit", { session_id: sid, continue: true, request_id: "go-on-1" });
    expect(again).toMatchObject({ status: "duplicate", turn_id: sub.turn_id });
    sock.close();
  });

  it("is the same over HTTP: POST /api/sessions/{id}/prompt { continue: true }", async () => {
    const sock = await open();
    const { session_id: sid } = await sock.call("session.create", {});
    await cutCount(sock, sid, 300, 5);
    const post = (body: unknown) =>
      fetch(`${srv.url}/api/sessions/${sid}/prompt`, { method: "POST", headers: { authorization: "Bearer key-alice", "content-type": "application/json" }, body: JSON.stringify(body) });
    const refused = await post({ continue: true, text: "hi" });
    expect(refused.status).toBe(400);
    const res = await post({ continue: true });
    expect(res.status).toBe(202);
    const { turn_id } = (await res.json()) as { turn_id: string };
    await done(sock, sid, turn_id);
    const { messages } = await sock.call("session.messages", { session_id: sid });
    expect(messages.map((m: any) => m.role)).toEqual(["user", "assistant", "assistant"]);
    expect(messages[1].content + messages[2].content).toBe(Array.from({ length: 300 }, (_, i) => i + 1).join(" "));
    sock.close();
  });

  it("refuses a continue that also carries a prompt (nothing silently dropped)", async () => {
    const sock = await open();
    const { session_id: sid } = await sock.call("session.create", {});
    for (const extra of [{ text: "hi" }, { parts: [{ type: "text", text: "hi" }] }, { from_message_id: "msg_x" }]) {
      await expect(sock.call("prompt.submit", { session_id: sid, continue: true, ...extra })).rejects.toMatchObject({ code: -32602 });
    }
    await expect(sock.call("prompt.submit", { session_id: sid, continue: false })).rejects.toMatchObject({ code: -32602 });
    sock.close();
  });
});

describe("prompt.edit", () => {
  it("changes a queued prompt's text in its place, in memory and in its stored row", async () => {
    const sock = await open();
    const { session_id: sid } = await sock.call("session.create", {});
    const running = await sock.call("prompt.submit", { session_id: sid, text: "count to 3000" });
    const first = await sock.call("prompt.submit", { session_id: sid, text: "first" });
    const second = await sock.call("prompt.submit", { session_id: sid, text: "second" });
    expect([first.status, second.status]).toEqual(["queued", "queued"]);

    expect(await sock.call("prompt.edit", { session_id: sid, turn_id: first.turn_id, text: "first, edited" })).toEqual({ status: "edited" });
    expect(await sock.call("prompt.edit", { session_id: sid, turn_id: running.turn_id, text: "too late" })).toEqual({ status: "started" });
    expect(await sock.call("prompt.edit", { session_id: sid, turn_id: "turn_unknown", text: "x" })).toEqual({ status: "idle" });
    // The stored row (what a restart would run) has the new text at the same place.
    const db = new Database(srv.dbPath, { readonly: true });
    const rows = db.prepare("SELECT turn_id, text FROM queued_turns WHERE session_id = ? ORDER BY position").all(sid);
    db.close();
    expect(rows).toEqual([
      { turn_id: first.turn_id, text: "first, edited" },
      { turn_id: second.turn_id, text: "second" },
    ]);

    await sock.call("session.interrupt", { session_id: sid });
    await done(sock, sid, second.turn_id);
    const { messages } = await sock.call("session.messages", { session_id: sid });
    expect(messages.filter((m: any) => m.role === "user").map((m: any) => m.content)).toEqual(["count to 3000", "first, edited", "second"]);
    sock.close();
  });

  it("is the session owner's only: another principal is told the session does not exist", async () => {
    const alice = await open();
    const bob = await open("key-bob");
    const { session_id: sid } = await alice.call("session.create", {});
    await alice.call("prompt.submit", { session_id: sid, text: "count to 3000" });
    const queued = await alice.call("prompt.submit", { session_id: sid, text: "mine" });
    await expect(bob.call("prompt.edit", { session_id: sid, turn_id: queued.turn_id, text: "bob's" })).rejects.toMatchObject({ code: 4007 });
    await alice.call("session.interrupt", { session_id: sid });
    await done(alice, sid, queued.turn_id);
    const { messages } = await alice.call("session.messages", { session_id: sid });
    expect(messages.filter((m: any) => m.role === "user").map((m: any) => m.content)).toEqual(["count to 3000", "mine"]);
    alice.close();
    bob.close();
  });

  it("holds an edit that grows a prompt to the queued-bytes quota (4102), and changes nothing then", async () => {
    const sock = await open();
    const { session_id: sid } = await sock.call("session.create", {});
    await sock.call("prompt.submit", { session_id: sid, text: "count to 3000" });
    const queued = await sock.call("prompt.submit", { session_id: sid, text: "short" });
    await expect(sock.call("prompt.edit", { session_id: sid, turn_id: queued.turn_id, text: "x".repeat(1200) })).rejects.toMatchObject({ code: 4102 });
    expect(await sock.call("prompt.edit", { session_id: sid, turn_id: queued.turn_id, text: "y".repeat(900) })).toEqual({ status: "edited" });
    await sock.call("session.interrupt", { session_id: sid });
    await done(sock, sid, queued.turn_id);
    const { messages } = await sock.call("session.messages", { session_id: sid });
    expect(messages.filter((m: any) => m.role === "user").map((m: any) => m.content)).toEqual(["count to 3000", "y".repeat(900)]);
    sock.close();
  });

  it("refuses an empty text (-32602)", async () => {
    const sock = await open();
    const { session_id: sid } = await sock.call("session.create", {});
    await expect(sock.call("prompt.edit", { session_id: sid, turn_id: "turn_x", text: "" })).rejects.toMatchObject({ code: -32602 });
    sock.close();
  });
});
