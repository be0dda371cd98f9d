/** The sessions API and its SSE event stream, over real HTTP connections to the real gateway. */
import { mkdirSync, mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { openSse, type SseEvent } from "../support/sse-client.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${server!.url}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

function deltasText(events: SseEvent[]): string {
  return events
    .filter((e) => e.event === "message.delta")
    .map((e) => JSON.parse(e.data).payload.text)
    .join("");
}

describe("sessions API", () => {
  it("creates, lists, renames, pages messages and closes sessions", async () => {
    server = await startTestServer();
    const created = await call("POST", "/api/sessions", { title: "first" });
    expect(created.status).toBe(201);
    const id = created.body.session_id;
    expect(created.body).toMatchObject({ title: "first", profile: "default", latest_seq: expect.any(Number), messages: [] });

    const sse = await openSse(`${server.url}/api/sessions/${id}/events`);
    const prompt = await call("POST", `/api/sessions/${id}/prompt`, { text: "count to 3" });
    expect(prompt.status).toBe(202);
    expect(prompt.body).toMatchObject({ turn_id: expect.stringMatching(/^turn_/), status: "started" });
    await sse.waitFor((evs) => evs.some((e) => e.event === "turn.complete"));
    sse.close();

    const list = await call("GET", "/api/sessions?limit=10");
    expect(list.body.sessions.map((s: { session_id: string }) => s.session_id)).toEqual([id]);
    expect((await call("PATCH", `/api/sessions/${id}`, { title: "renamed" })).body).toMatchObject({ title: "renamed" });
    // A field the route does not take is refused by name, not dropped.
    const typo = await call("PATCH", `/api/sessions/${id}`, { titel: "typo" });
    expect(typo.status).toBe(400);
    expect(typo.body.error).toMatchObject({ code: "invalid_params", param: "titel" });
    expect((await call("POST", `/api/sessions/${id}/prompt`, { text: "x", stream: true })).body.error).toMatchObject({ code: "invalid_params", param: "stream" });
    expect((await call("GET", `/api/sessions/${id}`)).body).toMatchObject({ title: "renamed", message_count: 2 });

    const p1 = await call("GET", `/api/sessions/${id}/messages?limit=1`);
    expect(p1.body.messages.map((m: { content: string }) => m.content)).toEqual(["count to 3"]);
    const p2 = await call("GET", `/api/sessions/${id}/messages?limit=1&after=${p1.body.next_cursor}`);
    expect(p2.body).toMatchObject({ messages: [{ role: "assistant", content: "1 2 3", status: "complete" }], next_cursor: null });

    expect((await call("DELETE", `/api/sessions/${id}`)).body).toEqual({ closed: true, end_reason: "user_close" });
    expect((await call("GET", `/api/sessions/${id}`)).body.state).toBe("ended");
    const closedPrompt = await call("POST", `/api/sessions/${id}/prompt`, { text: "again" });
    expect(closedPrompt.status).toBe(410);
    expect(closedPrompt.body.error.code).toBe("session_closed");
    expect((await call("GET", "/api/sessions/ses_missing")).body.error).toMatchObject({ code: "session_not_found", type: "not_found_error" });
  });

  it("honours Idempotency-Key on prompt: a replay answers the original turn, another body is a 409", async () => {
    server = await startTestServer();
    const id = (await call("POST", "/api/sessions", {})).body.session_id;
    const key = { "Idempotency-Key": "k-1" };
    const first = await call("POST", `/api/sessions/${id}/prompt`, { text: "count to 2" }, key);
    const again = await call("POST", `/api/sessions/${id}/prompt`, { text: "count to 2" }, key);
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    const other = await call("POST", `/api/sessions/${id}/prompt`, { text: "count to 9" }, key);
    expect(other.status).toBe(409);
    expect(other.body.error).toMatchObject({ code: "idempotency_key_reused", param: "Idempotency-Key" });
    // Only one turn ran.
    const sse = await openSse(`${server.url}/api/sessions/${id}/events?after_seq=0`);
    await sse.waitFor((evs) => evs.some((e) => e.event === "session.catchup"));
    await sse.waitFor((evs) => evs.some((e) => e.event === "turn.complete"));
    sse.close();
    expect(sse.events.filter((e) => e.event === "turn.start")).toHaveLength(1);
    // A create replayed by key answers the same session.
    const c1 = await call("POST", "/api/sessions", { title: "x" }, { "Idempotency-Key": "create-1" });
    const c2 = await call("POST", "/api/sessions", { title: "x" }, { "Idempotency-Key": "create-1" });
    expect(c2.status).toBe(201);
    expect(c2.body.session_id).toBe(c1.body.session_id);
  });

  it("streams frames as SSE with id: <seq> and resumes a cut connection with Last-Event-ID", async () => {
    server = await startTestServer({ demoDelayMs: 15 });
    const id = (await call("POST", "/api/sessions", {})).body.session_id;
    const first = await openSse(`${server.url}/api/sessions/${id}/events`);
    await first.waitFor((evs) => evs.some((e) => e.event === "session.snapshot"));
    await call("POST", `/api/sessions/${id}/prompt`, { text: "count to 80" });
    await first.waitFor((evs) => evs.filter((e) => e.event === "message.delta").length >= 10);
    first.close(); // the connection is cut mid-stream
    const frames = first.events.filter((e) => e.event !== "session.snapshot");
    for (const e of frames) expect(JSON.parse(e.data)).toMatchObject({ seq: Number(e.id), type: e.event, session_id: id });
    const lastId = frames.at(-1)!.id!;

    const second = await openSse(`${server.url}/api/sessions/${id}/events`, { headers: { "Last-Event-ID": lastId } });
    await second.waitFor((evs) => evs.some((e) => e.event === "turn.complete"));
    second.close();
    const ids = [...frames, ...second.events.filter((e) => e.event !== "session.catchup")].map((e) => Number(e.id));
    expect(ids.every((v, i) => i === 0 || v > ids[i - 1]!)).toBe(true); // nothing twice, in order
    const catchup = second.events.find((e) => e.event === "session.catchup")!;
    expect(JSON.parse(catchup.data)).toMatchObject({ truncated: false, latest_seq: Number(catchup.id) });
    // Nothing lost: the deltas of both connections spell the whole message.
    const complete = second.events.find((e) => e.event === "message.complete" && JSON.parse(e.data).payload.role === "assistant")!;
    expect(deltasText(first.events) + deltasText(second.events)).toBe(JSON.parse(complete.data).payload.content);
  });

  it("sends a snapshot of a streaming message after catch-up when its deltas are gone from the ring", async () => {
    server = await startTestServer({ demoDelayMs: 15, config: { limits: { ringFrames: 4 } } });
    const id = (await call("POST", "/api/sessions", {})).body.session_id;
    const watch = await openSse(`${server.url}/api/sessions/${id}/events`);
    await call("POST", `/api/sessions/${id}/prompt`, { text: "count to 200" });
    await watch.waitFor((evs) => evs.filter((e) => e.event === "message.delta").length >= 20);
    watch.close();
    const resumed = await openSse(`${server.url}/api/sessions/${id}/events?after_seq=1`);
    await resumed.waitFor((evs) => evs.some((e) => e.event === "session.catchup"));
    resumed.close();
    const catchup = JSON.parse(resumed.events.find((e) => e.event === "session.catchup")!.data);
    expect(catchup.snapshots).toHaveLength(1);
    expect(catchup.snapshots[0].text).toMatch(/^1 2 3 4 5 6 7 8 9 10 11/);
    expect(catchup.snapshots[0].as_of_seq).toBe(catchup.latest_seq);
  });
});

describe("sessions API: prompt.edit and workspace.folders", () => {
  const alice = { authorization: "Bearer key-alice", "content-type": "application/json" };
  const bob = { authorization: "Bearer key-bob", "content-type": "application/json" };
  const users = async (id: string) =>
    ((await call("GET", `/api/sessions/${id}/messages`, undefined, alice)).body.messages as Array<{ role: string; content: string }>).filter((m) => m.role === "user").map((m) => m.content);

  it("PATCH /api/sessions/{id}/turns/{turn_id} edits a queued prompt in its place; another principal's session answers like an unknown one", async () => {
    server = await startTestServer({ demoDelayMs: 2, config: { auth: { keys: { "key-alice": "alice", "key-bob": "bob" } }, quotas: { max_queued_prompt_bytes: 1000 } } });
    const id = (await call("POST", "/api/sessions", {}, alice)).body.session_id;
    const running = (await call("POST", `/api/sessions/${id}/prompt`, { text: "count to 3000" }, alice)).body;
    const queued = (await call("POST", `/api/sessions/${id}/prompt`, { text: "first" }, alice)).body;
    expect([running.status, queued.status]).toEqual(["started", "queued"]);
    const edit = (turnId: string, body: unknown, headers = alice) => call("PATCH", `/api/sessions/${id}/turns/${turnId}`, body, headers);

    // Bob: the same 404 as a session that does not exist, and the prompt is left alone.
    const bobs = await edit(queued.turn_id, { text: "bob's" }, bob);
    const nobody = await call("PATCH", `/api/sessions/ses_nope/turns/${queued.turn_id}`, { text: "bob's" }, bob);
    expect(bobs.status).toBe(404);
    expect(bobs.body.error.code).toBe("session_not_found");
    expect(bobs.body.error.code).toBe(nobody.body.error.code);
    // Bad bodies are refused by name; a text past the queued-bytes quota is 429 (4102), nothing changed.
    expect((await edit(queued.turn_id, {})).body.error).toMatchObject({ code: "invalid_params", param: "text" });
    expect((await edit(queued.turn_id, { text: "x", turn_id: "t" })).body.error).toMatchObject({ code: "invalid_params", param: "turn_id" });
    const tooBig = await edit(queued.turn_id, { text: "x".repeat(1200) });
    expect(tooBig.status).toBe(429);
    expect(tooBig.body.error.code).toBe("queued_prompts_too_large");

    expect((await edit(queued.turn_id, { text: "first, edited" })).body).toEqual({ status: "edited" });
    expect((await edit(running.turn_id, { text: "too late" })).body).toEqual({ status: "started" });
    expect((await edit("turn_unknown", { text: "x" })).body).toEqual({ status: "idle" });

    await call("POST", `/api/sessions/${id}/interrupt`, undefined, alice);
    await expect.poll(() => users(id), { timeout: 20_000 }).toEqual(["count to 3000", "first, edited"]);
  });

  it("GET /api/workspace/folders lists the roots and a root's sub-folders; outside them is 403 cwd_outside_workspace", async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "tether-http-folders-")));
    for (const d of ["beta", "alpha", "alpha/inner"]) mkdirSync(join(root, d));
    server = await startTestServer({
      config: { auth: { keys: { "key-alice": "alice" } }, tools: { workspace: { roots: [root] } }, profiles: { plain: { tools: { workspace: false } } } } as never,
    });
    const folders = (query: string) => call("GET", `/api/workspace/folders${query}`, undefined, alice);
    expect((await folders("")).body).toEqual({ roots: [root], path: null, folders: [], truncated: false });
    expect((await folders(`?path=${encodeURIComponent(root)}`)).body).toEqual({ roots: [root], path: root, folders: ["alpha", "beta"], truncated: false });
    expect((await folders(`?path=${encodeURIComponent(join(root, "alpha"))}`)).body.folders).toEqual(["inner"]);
    for (const path of ["/etc", join(root, "alpha", "..", ".."), "alpha"]) {
      const refused = await folders(`?path=${encodeURIComponent(path)}`);
      expect(refused.status, path).toBe(403);
      expect(refused.body.error.code, path).toBe("cwd_outside_workspace");
    }
    expect((await folders(`?path=/${"a".repeat(4100)}`)).body.error).toMatchObject({ code: "invalid_params", param: "path" });
    expect((await folders(`?profile=plain&path=${encodeURIComponent(root)}`)).body).toEqual({ roots: [], path: null, folders: [], truncated: false });
    expect((await folders("?profile=nope")).status).toBe(400);
    // Keys gate it as every sessions route: no key, no listing.
    expect((await call("GET", "/api/workspace/folders")).status).toBe(401);
  });
});
