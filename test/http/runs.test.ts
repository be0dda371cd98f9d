/**
 * /v1/runs with the real `fetch` against the real gateway (SQLite file, 127.0.0.1): start a run,
 * its status, its events as SSE resumed by Last-Event-ID; the session chosen by body id, by
 * previous response, by `X-Session-Key`; Idempotency-Key replay and conflict; principal scoping;
 * the status after a restart; and the live-tip regression (a run addressed to a compressed
 * session loads its history from the continuation and writes there).
 */
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, tempDbPath, type TestServer } from "../support/start-server.js";
import { openSse, type SseEvent } from "../support/sse-client.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";

let server: TestServer | undefined;
let upstream: FakeOpenAI | undefined;
afterEach(async () => {
  await server?.close();
  await upstream?.close();
  server = upstream = undefined;
});

const KEYS = { "key-alice": "alice", "key-bob": "bob" };

function post(s: TestServer, path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${s.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer key-alice", ...headers },
    body: JSON.stringify(body),
  });
}

async function startRun(s: TestServer, body: unknown, headers: Record<string, string> = {}) {
  const res = await post(s, "/v1/runs", body, headers);
  expect(res.status).toBe(202);
  return { res, body: (await res.json()) as { run_id: string; status: string; session_id: string } };
}

function getRun(s: TestServer, id: string, key = "key-alice") {
  return fetch(`${s.url}/v1/runs/${id}`, { headers: { authorization: `Bearer ${key}` } });
}

/** Follows the run's events to the end of the stream (the terminal event). */
async function events(s: TestServer, id: string, headers: Record<string, string> = {}): Promise<SseEvent[]> {
  const sse = await openSse(`${s.url}/v1/runs/${id}/events`, { headers: { authorization: "Bearer key-alice", ...headers } });
  expect(sse.status).toBe(200);
  await sse.ended;
  return sse.events;
}

async function finished(s: TestServer, id: string) {
  const evs = await events(s, id);
  expect(evs.at(-1)!.event).toMatch(/^run\.(completed|failed|cancelled)$/);
  return (await getRun(s, id)).json();
}

async function messagesOf(s: TestServer, sessionId: string): Promise<Array<{ role: string; content: string; display_kind?: string }>> {
  const res = await fetch(`${s.url}/api/sessions/${sessionId}/messages`, { headers: { authorization: "Bearer key-alice" } });
  return (await res.json()).messages;
}

describe("/v1/runs", () => {
  it("starts a run (202), streams its events with ids to the terminal one, and reports it done", async () => {
    server = await startTestServer({ config: { auth: { keys: KEYS } } });
    const { body } = await startRun(server, { input: "count to 4" });
    expect(body).toMatchObject({ run_id: expect.stringMatching(/^run/), session_id: expect.any(String) });
    expect(["queued", "running"]).toContain(body.status);

    const evs = await events(server, body.run_id);
    expect(evs[0]!.event).toBe("run.started");
    expect(evs.at(-1)!.event).toBe("run.completed");
    const ids = evs.map((e) => Number(e.id));
    expect(ids.every((n) => Number.isInteger(n))).toBe(true);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    const text = evs.filter((e) => e.event === "message.delta").map((e) => JSON.parse(e.data).text).join("");
    expect(text).toBe("1 2 3 4");
    expect(JSON.parse(evs.at(-1)!.data)).toMatchObject({ run_id: body.run_id, output: "1 2 3 4", usage: { total_tokens: expect.any(Number) } });

    const run = await (await getRun(server, body.run_id)).json();
    expect(run).toMatchObject({ object: "run", run_id: body.run_id, status: "completed", session_id: body.session_id, model: "demo", output: "1 2 3 4" });
    expect(run.usage.total_tokens).toBeGreaterThan(0);
    expect(run.updated_at).toBeGreaterThanOrEqual(run.created_at);

    // Resumed after the second event: exactly the rest, nothing twice.
    const rest = await events(server, body.run_id, { "last-event-id": evs[1]!.id! });
    expect(rest.map((e) => e.id)).toEqual(evs.slice(2).map((e) => e.id));
  });

  it("answers an unknown run and another principal's run the same 404", async () => {
    server = await startTestServer({ config: { auth: { keys: KEYS } } });
    const { body } = await startRun(server, { input: "count to 2" });
    const foreign = await getRun(server, body.run_id, "key-bob");
    const unknown = await getRun(server, "run_nope", "key-bob");
    expect(foreign.status).toBe(404);
    expect(unknown.status).toBe(404);
    const [a, b] = [await foreign.json(), await unknown.json()];
    expect(a.error.code).toBe("run_not_found");
    expect({ ...a.error, message: "" }).toEqual({ ...b.error, message: "" });
    const events = await fetch(`${server.url}/v1/runs/${body.run_id}/events`, { headers: { authorization: "Bearer key-bob" } });
    expect(events.status).toBe(404);
    // Bob cannot address Alice's session either.
    const res = await post(server, "/v1/runs", { input: "hi", session_id: body.session_id }, { authorization: "Bearer key-bob" });
    expect(res.status).toBe(404);
  });

  it("replays an Idempotency-Key with the same run and Idempotency-Replayed: true; another body is 409", async () => {
    server = await startTestServer({ config: { auth: { keys: KEYS } } });
    const first = await startRun(server, { input: "count to 3" }, { "idempotency-key": "k-1" });
    expect(first.res.headers.get("idempotency-replayed")).toBeNull();
    await finished(server, first.body.run_id);
    const again = await startRun(server, { input: "count to 3" }, { "idempotency-key": "k-1" });
    expect(again.res.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body).toEqual({ run_id: first.body.run_id, session_id: first.body.session_id, status: "completed" });
    const other = await post(server, "/v1/runs", { input: "count to 4" }, { "idempotency-key": "k-1" });
    expect(other.status).toBe(409);
    expect((await other.json()).error.code).toBe("idempotency_key_reused");
    // One turn in the session, not two.
    expect((await messagesOf(server, first.body.session_id)).filter((m) => m.role === "user")).toHaveLength(1);
  });

  it("binds X-Session-Key to the session its first run creates, and echoes it", async () => {
    server = await startTestServer({ config: { auth: { keys: KEYS } } });
    const a = await startRun(server, { input: "say alpha" }, { "x-session-key": "conv-1" });
    expect(a.res.headers.get("x-session-key")).toBe("conv-1");
    await finished(server, a.body.run_id);
    const b = await startRun(server, { input: "say beta" }, { "x-session-key": "conv-1" });
    expect(b.res.headers.get("x-session-key")).toBe("conv-1");
    expect(b.body.session_id).toBe(a.body.session_id);
    await finished(server, b.body.run_id);
    expect((await messagesOf(server, a.body.session_id)).filter((m) => m.role === "user").map((m) => m.content)).toEqual(["say alpha", "say beta"]);
    // Another key, another session; the same key of another principal is that principal's own.
    const c = await startRun(server, { input: "say gamma" }, { "x-session-key": "conv-2" });
    expect(c.body.session_id).not.toBe(a.body.session_id);
    const bob = await startRun(server, { input: "say delta" }, { "x-session-key": "conv-1", authorization: "Bearer key-bob" });
    expect(bob.body.session_id).not.toBe(a.body.session_id);
  });

  it("chooses the body's session_id over previous_response_id over the key", async () => {
    server = await startTestServer({ config: { auth: { keys: KEYS } } });
    const keyed = await startRun(server, { input: "one" }, { "x-session-key": "conv" });
    await finished(server, keyed.body.run_id);
    const resp = await post(server, "/v1/responses", { model: "demo", input: "two" });
    const response = await resp.json();
    const byPrevious = await startRun(server, { input: "three", previous_response_id: response.id }, { "x-session-key": "conv" });
    expect(byPrevious.body.session_id).toBe(response.session_id);
    await finished(server, byPrevious.body.run_id);
    const own = await startRun(server, { input: "four" });
    await finished(server, own.body.run_id);
    const byId = await startRun(server, { input: "five", session_id: own.body.session_id, previous_response_id: response.id }, { "x-session-key": "conv" });
    expect(byId.body.session_id).toBe(own.body.session_id);
  });

  it("refuses what it cannot honour by name", async () => {
    server = await startTestServer({ config: { auth: { keys: KEYS } } });
    const cases: Array<[unknown, string]> = [
      [{ input: "x", tools: [{ type: "function", function: { name: "f" } }] }, "tools"],
      [{ input: "x", model: "no-such-model" }, "model"],
      [{ input: "x", previous_response_id: "resp_nope" }, "previous_response_id"],
      [{ input: "x", surprise: 1 }, "surprise"],
      [{ input: [{ role: "assistant", content: "hi" }] }, "input.0.role"],
      // An image is refused by its path, not dropped with the text kept.
      [{ input: [{ role: "user", content: [{ type: "input_text", text: "what is it?" }, { type: "input_image", image_url: "https://x.example/a.png" }] }] }, "input.0.content.1"],
    ];
    for (const [body, param] of cases) {
      const res = await post(server, "/v1/runs", body);
      expect(res.status, JSON.stringify(body)).toBeGreaterThanOrEqual(400);
      expect((await res.json()).error.param).toBe(param);
    }
    const own = await startRun(server, { input: "x", instructions: "be brief" });
    await finished(server, own.body.run_id);
    const res = await post(server, "/v1/runs", { input: "y", instructions: "be long", session_id: own.body.session_id });
    expect(res.status).toBe(400);
    expect((await res.json()).error.param).toBe("instructions");
  });

  it("reports a run's status from the event log after a restart", async () => {
    const dbPath = tempDbPath();
    server = await startTestServer({ dbPath, config: { auth: { keys: KEYS } } });
    const { body } = await startRun(server, { input: "count to 3" });
    // Waited for through the session's own stream: the run's row is never read before the restart.
    const sse = await openSse(`${server.url}/api/sessions/${body.session_id}/events?after_seq=0`, { headers: { authorization: "Bearer key-alice" } });
    await sse.waitFor((evs) => evs.some((e) => e.event === "turn.complete"));
    sse.close();
    await server.close();
    server = await startTestServer({ dbPath, config: { auth: { keys: KEYS } } });
    const run = await (await getRun(server, body.run_id)).json();
    expect(run).toMatchObject({ status: "completed", output: "1 2 3", session_id: body.session_id });
    const evs = await events(server, body.run_id);
    expect(evs.map((e) => e.event)).toEqual(["run.started", "run.completed"]);
  });
});

describe("/v1/runs on a compressed session (the live-tip regression)", () => {
  async function compressedConversation() {
    upstream = await startFakeOpenAI();
    server = await startTestServer({
      providerUrl: upstream.url,
      config: { auth: { keys: KEYS }, compression: { threshold_tokens: 1_000_000, protect_first_n: 1, protect_last_n: 1 } },
    });
    upstream.script(reply.text(["first answer"]), reply.text(["second answer"]));
    const first = await startRun(server, { input: "remember the word zebra" }, { "x-session-key": "conv" });
    await finished(server, first.body.run_id);
    const second = await startRun(server, { input: "and the colour blue" }, { "x-session-key": "conv" });
    await finished(server, second.body.run_id);
    return { s: server, ai: upstream, parent: first.body.session_id };
  }

  it("a run addressed to the parent (by id, by key) loads its history from the continuation and writes there", async () => {
    const { s, ai, parent } = await compressedConversation();
    const rotated = await openSse(`${s.url}/api/sessions/${parent}/events?after_seq=0`, { headers: { authorization: "Bearer key-alice" } });
    ai.script(reply.text(["SUMMARY: the user said zebra"]));
    const compress = await startRun(s, { input: "/compress" }, { "x-session-key": "conv" });
    await finished(s, compress.body.run_id);
    await rotated.waitFor((evs) => evs.some((e) => e.event === "session.rotated"));
    rotated.close();
    const parentBefore = await messagesOf(s, parent);

    ai.script(reply.text(["by id"]), reply.text(["by key"]));
    const byId = await startRun(s, { input: "what was the word?", session_id: parent });
    const tip = byId.body.session_id;
    expect(tip).not.toBe(parent);
    expect(await finished(s, byId.body.run_id)).toMatchObject({ session_id: tip, output: "by id" });
    const byKey = await startRun(s, { input: "and again?" }, { "x-session-key": "conv" });
    expect(byKey.body.session_id).toBe(tip);
    expect(await finished(s, byKey.body.run_id)).toMatchObject({ session_id: tip, output: "by key" });

    // The model saw the continuation's history (the summary), not the parent's transcript.
    const sent = ai.requests.at(-2)!.body.messages as Array<{ role: string; content: string }>;
    expect(sent.some((m) => m.content.includes("SUMMARY: the user said zebra"))).toBe(true);
    expect(sent.at(-1)).toMatchObject({ role: "user", content: "what was the word?" });
    // Written to the tip; the closed parent is untouched.
    const tipMessages = await messagesOf(s, tip);
    expect(tipMessages.filter((m) => m.role === "user" && !m.display_kind).map((m) => m.content)).toEqual([
      "remember the word zebra", // the protected head, carried over by the rotation
      "what was the word?",
      "and again?",
    ]);
    expect(await messagesOf(s, parent)).toEqual(parentBefore);
  });

  it("a run queued behind the compression follows its turn to the continuation", async () => {
    const { s, ai, parent } = await compressedConversation();
    // The summary call is slow, so the next run is queued on the parent while it compresses.
    ai.script(reply.text(["SUMMARY: zebra"], { delayMs: 300 }), reply.text(["after the rotation"]));
    const compress = await startRun(s, { input: "/compress" }, { "x-session-key": "conv" });
    const next = await startRun(s, { input: "still there?" }, { "x-session-key": "conv" });
    expect(next.body).toMatchObject({ session_id: parent, status: "queued" });
    await finished(s, compress.body.run_id);
    const evs = await events(s, next.body.run_id);
    expect(evs.map((e) => e.event)).toEqual(["run.started", "message.delta", "run.completed"]);
    const run = await (await getRun(s, next.body.run_id)).json();
    expect(run.session_id).not.toBe(parent);
    expect(run).toMatchObject({ status: "completed", output: "after the rotation" });
    const tipMessages = await messagesOf(s, run.session_id);
    expect(tipMessages.at(-2)).toMatchObject({ role: "user", content: "still there?" });
    expect((await messagesOf(s, parent)).some((m) => m.content === "still there?")).toBe(false);
    // Its events resume in the continuation's seqs.
    const rest = await events(s, next.body.run_id, { "last-event-id": evs[0]!.id! });
    expect(rest.map((e) => e.event)).toEqual(["message.delta", "run.completed"]);
  });
});
