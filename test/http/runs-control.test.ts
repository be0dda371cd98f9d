/**
 * What a client does to a run while it goes, with the real `fetch` against the real gateway:
 * stop (running, queued, over), approval (an MCP tool that asks; 409 when nothing waits; keep-alive
 * comments while it waits), and steering — over the runs route, `session.steer` on WebSocket and
 * busy policy `steer` — proved against a real local HTTP upstream speaking the OpenAI streaming
 * protocol, which records what the model receives in each call of the turn.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { openSse, type SseConnection } from "../support/sse-client.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";
import { readLog, stdioTestServer, tempLog } from "../support/mcp-fixture.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { FakeClock } from "../../src/lib/clock.js";

/** How long a first MCP call may take to reach the model's tool call (the server process starts). */
const SLOW_START_MS = 40_000;

let server: TestServer | undefined;
let upstream: FakeOpenAI | undefined;
let socket: RpcSocket | undefined;
afterEach(async () => {
  socket?.close();
  await server?.close();
  await upstream?.close();
  server = upstream = socket = undefined;
});

function post(s: TestServer, path: string, body: unknown) {
  return fetch(`${s.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

async function startRun(s: TestServer, body: unknown): Promise<{ run_id: string; status: string; session_id: string }> {
  const res = await post(s, "/v1/runs", body);
  expect(res.status).toBe(202);
  return res.json();
}

const runOf = async (s: TestServer, id: string) => (await fetch(`${s.url}/v1/runs/${id}`)).json();
const follow = (s: TestServer, id: string): Promise<SseConnection> => openSse(`${s.url}/v1/runs/${id}/events`);
/** Event names in order, a run of deltas as one. */
const names = (sse: SseConnection) => sse.events.map((e) => e.event).filter((n, i, all) => n !== "message.delta" || all[i - 1] !== n);

describe("POST /v1/runs/{id}/stop", () => {
  it("stops a running run (stopping, then run.cancelled), drops a queued one at once, and answers a finished one as it is", async () => {
    server = await startTestServer({ demoDelayMs: 5 });
    const running = await startRun(server, { input: "count to 5000" });
    const queued = await startRun(server, { input: "count to 3", session_id: running.session_id });
    expect(queued.status).toBe("queued");
    const sse = await follow(server, running.run_id);
    await sse.waitFor((evs) => evs.filter((e) => e.event === "message.delta").length >= 5);

    const dropped = await (await post(server, `/v1/runs/${queued.run_id}/stop`, {})).json();
    expect(dropped).toEqual({ run_id: queued.run_id, status: "cancelled" });
    const stopped = await (await post(server, `/v1/runs/${running.run_id}/stop`, {})).json();
    expect(stopped).toEqual({ run_id: running.run_id, status: "stopping" });
    await sse.ended;
    expect(names(sse).at(-1)).toBe("run.cancelled");
    const partial = JSON.parse(sse.events.at(-1)!.data).output as string;
    expect("1 2 3 4 5 6 7 8 9".startsWith(partial.slice(0, 9))).toBe(true);
    expect(await runOf(server, running.run_id)).toMatchObject({ status: "cancelled" });
    expect(await runOf(server, queued.run_id)).toMatchObject({ status: "cancelled" });
    // The dropped run never started a turn; its stream is just its end.
    const rest = await follow(server, queued.run_id);
    await rest.ended;
    expect(names(rest)).toEqual(["run.cancelled"]);

    const done = await startRun(server, { input: "count to 2" });
    await (await follow(server, done.run_id)).ended;
    expect(await (await post(server, `/v1/runs/${done.run_id}/stop`, {})).json()).toEqual({ run_id: done.run_id, status: "completed" });
  });
});

describe("POST /v1/runs/{id}/approval", () => {
  it("the run waits (status waiting, open_requests, keep-alives), the approval continues it; 409 once nothing waits", async () => {
    const log = tempLog();
    // Keep-alives on a FakeClock: each is written when the test moves time, never by a real timer,
    // so a loaded machine cannot starve or bunch them.
    const clock = new FakeClock();
    const keepAliveMs = 15_000;
    server = await startTestServer({ clock, config: { mcp_servers: { notes: stdioTestServer({ MCP_TEST_LOG: log }) }, http: { sse_keepalive_ms: keepAliveMs } } });
    const run = await startRun(server, { input: 'call: notes__write_note {"key": "a1", "value": "v"}' });
    const sse = await follow(server, run.run_id);
    // The first call spawns the MCP server (a TypeScript process): seconds on a loaded machine.
    await sse.waitFor((evs) => evs.some((e) => e.event === "request.opened"), SLOW_START_MS);
    const waiting = await runOf(server, run.run_id);
    expect(waiting).toMatchObject({ status: "waiting", open_requests: [{ kind: "approval", tool: "notes__write_note" }] });
    const keepAlives = () => sse.comments.filter((c) => c === "keep-alive").length;
    expect(keepAlives()).toBe(0);
    await clock.advance(keepAliveMs - 1);
    expect(keepAlives()).toBe(0);
    for (const n of [1, 2]) {
      await clock.advance(keepAliveMs);
      await sse.waitFor(() => keepAlives() >= n);
    }
    expect(sse.events.at(-1)?.event).toBe("request.opened");

    const bad = await post(server, `/v1/runs/${run.run_id}/approval`, { choice: "once", request_id: "req_nope" });
    expect(bad.status).toBe(409);
    const answered = await (await post(server, `/v1/runs/${run.run_id}/approval`, { choice: "once" })).json();
    expect(answered).toMatchObject({ run_id: run.run_id, resolved: [{ request_id: waiting.open_requests[0].request_id, status: "resolved", choice: "once" }] });
    await sse.ended;
    expect(names(sse)).toEqual(["run.started", "request.opened", "request.resolved", "tool.started", "tool.completed", "message.delta", "run.completed"]);
    expect(await runOf(server, run.run_id)).toMatchObject({ status: "completed", output: "notes__write_note returned: wrote a1" });
    expect(readLog(log).filter((e) => e.tool === "write_note" && e.key === "a1")).toHaveLength(1);

    const late = await post(server, `/v1/runs/${run.run_id}/approval`, { choice: "once" });
    expect(late.status).toBe(409);
    expect((await late.json()).error.code).toBe("no_open_request");
  }, 60_000);
});

describe("steering", () => {
  async function withUpstream(config: Record<string, unknown> = {}) {
    upstream = await startFakeOpenAI();
    server = await startTestServer({ providerUrl: upstream.url, config });
    return { s: server, ai: upstream };
  }
  const TODO = { id: "call_1", name: "todo", arguments: '{"items":[{"text":"measure","status":"pending"}]}' };

  it("POST /v1/runs/{id}/steer: the text joins the turn after the tool step, before its next model call", async () => {
    const { s, ai } = await withUpstream();
    // The first call streams slowly (a tool call), so the steer lands while it runs.
    ai.script(reply.toolCalls([TODO], { fragments: 4, delayMs: 80 }), reply.text(["in metres"]));
    const run = await startRun(s, { input: "how far is it?" });
    const sse = await follow(s, run.run_id);
    await sse.waitFor((evs) => evs.some((e) => e.event === "run.started"));
    const steered = await (await post(s, `/v1/runs/${run.run_id}/steer`, { text: "use metric units" })).json();
    expect(steered).toMatchObject({ run_id: run.run_id, status: "steered", session_id: run.session_id });
    await sse.ended;

    expect(ai.requests).toHaveLength(2);
    const second = ai.requests[1]!.body.messages as Array<{ role: string; content: string | null; tool_call_id?: string }>;
    // After the tool call and its result, never between them; then the steer.
    expect(second.slice(-3).map((m) => m.role)).toEqual(["assistant", "tool", "user"]);
    expect(second.at(-1)).toMatchObject({ role: "user", content: "use metric units" });
    expect((ai.requests[0]!.body.messages as Array<{ content: string }>).some((m) => m.content === "use metric units")).toBe(false);
    // One turn: one run.started, the steer in its stream, the answer after it.
    expect(names(sse)).toEqual(["run.started", "tool.started", "tool.completed", "run.steered", "message.delta", "run.completed"]);
    expect(JSON.parse(sse.events.find((e) => e.event === "run.steered")!.data)).toMatchObject({ text: "use metric units" });
    // Durable: a user message with display_kind "steer" and turn.steered in the session's log.
    const msgs = (await (await fetch(`${s.url}/api/sessions/${run.session_id}/messages`)).json()).messages;
    expect(msgs.find((m: { content: string }) => m.content === "use metric units")).toMatchObject({ role: "user", display_kind: "steer" });
    const log = await openSse(`${s.url}/api/sessions/${run.session_id}/events?after_seq=0`);
    await log.waitFor((evs) => evs.some((e) => e.event === "session.catchup"));
    log.close();
    expect(log.events.filter((e) => e.event === "turn.steered")).toHaveLength(1);
    expect(log.events.filter((e) => e.event === "turn.start")).toHaveLength(1);
  });

  it("session.steer over WebSocket while the model writes its answer: one more call in the same turn", async () => {
    const { s, ai } = await withUpstream();
    ai.script(reply.text(["a", "b", "c", "d"], { delayMs: 80 }), reply.text(["steered answer"]));
    socket = await RpcSocket.open(s.wsUrl);
    const snap = await socket.call("session.create", {});
    const sub = await socket.call("prompt.submit", { session_id: snap.session_id, text: "write something" });
    await socket.waitForEvent(snap.session_id, (f) => f.type === "message.delta");
    const steered = await socket.call("session.steer", { session_id: snap.session_id, text: "shorter please" });
    expect(steered).toMatchObject({ status: "steered", turn_id: sub.turn_id });
    const done = await socket.waitForEvent(snap.session_id, (f) => f.type === "turn.complete");
    expect(done.payload).toMatchObject({ turn_id: sub.turn_id, status: "complete" });
    expect(ai.requests).toHaveLength(2);
    expect(ai.requests[1]!.body.messages.slice(-3)).toMatchObject([
      { role: "user", content: "write something" },
      { role: "assistant", content: "abcd" },
      { role: "user", content: "shorter please" },
    ]);
    const frames = socket.sessionEvents(snap.session_id);
    expect(frames.find((f) => f.type === "turn.steered")).toMatchObject({ turn_id: sub.turn_id, payload: { text: "shorter please" } });
    expect(frames.filter((f) => f.type === "turn.start")).toHaveLength(1);

    // With no turn running, a steer starts one as a submit would.
    ai.script(reply.text(["fresh"]));
    const idle = await socket.call("session.steer", { session_id: snap.session_id, text: "new topic" });
    expect(idle.status).toBe("started");
    await socket.waitForEvent(snap.session_id, (f) => f.type === "turn.complete" && f.payload.turn_id === idle.turn_id);
    expect(ai.requests[2]!.body.messages.at(-1)).toMatchObject({ role: "user", content: "new topic" });
  });

  it("a steer addressed to a queued run is refused (409 turn_not_started), never injected into the run ahead; a steered run's output keeps its own answer and the steer's", async () => {
    const { s, ai } = await withUpstream();
    let open!: () => void;
    const held = new Promise<void>((resolve) => (open = resolve));
    let reached!: () => void;
    const atGate = new Promise<void>((resolve) => (reached = resolve));
    ai.script(
      reply.stream([
        { type: "delta", delta: { role: "assistant", content: "" } },
        { type: "delta", delta: { content: "first " } },
        { type: "wait", until: held, reached },
        { type: "delta", delta: { content: "answer" } },
        { type: "finish", reason: "stop" },
        { type: "done" },
      ]),
      reply.text(["in metres"]),
      reply.text(["second answer"]),
    );
    const running = await startRun(s, { input: "how far is it?" });
    const queued = await startRun(s, { input: "and how high?", session_id: running.session_id });
    expect(queued.status).toBe("queued");
    await atGate;

    const refused = await post(s, `/v1/runs/${queued.run_id}/steer`, { text: "in feet" });
    expect(refused.status).toBe(409);
    expect((await refused.json()).error).toMatchObject({ code: "turn_not_started", message: expect.stringContaining(queued.run_id) });
    const steered = await (await post(s, `/v1/runs/${running.run_id}/steer`, { text: "use metric units" })).json();
    expect(steered).toMatchObject({ run_id: running.run_id, status: "steered" });
    open();
    const sse = await follow(s, queued.run_id);
    await sse.ended;

    expect(await runOf(s, running.run_id)).toMatchObject({ status: "completed", output: "first answer\n\nin metres" });
    expect(await runOf(s, queued.run_id)).toMatchObject({ status: "completed", output: "second answer" });
    // The refused text reached no model call; the accepted one only the running run's second call.
    const said = (i: number) => (ai.requests[i]!.body.messages as Array<{ content: string | null }>).map((m) => m.content);
    expect(ai.requests).toHaveLength(3);
    expect([0, 1, 2].some((i) => said(i).includes("in feet"))).toBe(false);
    expect(said(1).at(-1)).toBe("use metric units");
    expect(said(2).at(-1)).toBe("and how high?");
  });

  it("busy policy steer: a prompt submitted while a turn runs joins it", async () => {
    const { s, ai } = await withUpstream({ busyPolicy: "steer" });
    ai.script(reply.toolCalls([TODO], { fragments: 4, delayMs: 80 }), reply.text(["done"]));
    socket = await RpcSocket.open(s.wsUrl);
    const snap = await socket.call("session.create", {});
    const first = await socket.call("prompt.submit", { session_id: snap.session_id, text: "start" });
    await socket.waitForEvent(snap.session_id, (f) => f.type === "turn.start");
    const second = await socket.call("prompt.submit", { session_id: snap.session_id, text: "also this" });
    expect(second).toMatchObject({ status: "steered", turn_id: first.turn_id });
    await socket.waitForEvent(snap.session_id, (f) => f.type === "turn.complete");
    expect(ai.requests).toHaveLength(2);
    expect(ai.requests[1]!.body.messages.at(-1)).toMatchObject({ role: "user", content: "also this" });
  });
});
