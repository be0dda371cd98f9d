/**
 * Real `tether serve` nodes on one PostgreSQL + one Redis (`--store postgres://… --bus redis://…`):
 * any node serves any client, a dead node's sessions are taken over on the next call, and a paused
 * node that comes back can never write again (fencing). A node that finds it lost a session's lease
 * leaves none of its streams silent: SSE session streams catch up and go on (or end without a bus),
 * runs and Responses streams end for a resume from the log, a chat completion fails `session_moved`.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { Frame } from "../../src/protocol/index.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { dropTestSchemas, pgAvailable, pgQuery, pgTestUrl } from "../support/pg.js";
import { eventually, openSse, type SseConnection, type SseEvent } from "../support/sse-client.js";
import { dropTestKeys, redisAvailable, redisTestUrl } from "../support/redis.js";
import WebSocket from "ws";
import OpenAI from "openai";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TetherClient } from "../../src/client/index.js";

const running: SpawnedGateway[] = [];
afterEach(async () => {
  for (const g of running.splice(0)) await g.kill("SIGKILL");
});
afterAll(dropTestSchemas);

const FAST = { TETHER_DEMO_DELAY_MS: "10", TETHER_HEARTBEAT_S: "0.2", TETHER_ORPHAN_GRACE_S: "1", TETHER_LEASE_TTL_S: "1" };

async function node(store: string, env: Record<string, string> = FAST, extra: string[] = []): Promise<SpawnedGateway> {
  const g = await spawnGateway(["--port", "0", "--store", store, ...extra], env);
  running.push(g);
  return g;
}

describe.skipIf(!pgAvailable || !redisAvailable)("tether serve nodes on PostgreSQL + Redis", () => {
  afterAll(dropTestKeys);

  it("three nodes: a viewer on C sees A's turn live; a client cut from A reconnects to B mid-turn and ends with the exact text", async () => {
    const store = pgTestUrl();
    const bus = redisTestUrl();
    const [a, b, c] = await Promise.all([0, 1, 2].map(() => node(store, FAST, ["--bus", bus])));
    const sa = await RpcSocket.open(a!.wsUrl);
    const sid = (await sa.call("session.create", {})).session_id;
    const sc = await RpcSocket.open(c!.wsUrl);
    await sc.call("session.resume", { session_id: sid });
    const turn = await sa.call("prompt.submit", { session_id: sid, text: "count to 300" });
    await sa.waitFor(() => sa.sessionEvents(sid).filter((f) => f.type === "message.delta").length >= 50);
    sa.close();
    const seen = sa.sessionEvents(sid);
    const watermark = seen.at(-1)!.seq!;
    const sb = await RpcSocket.open(b!.wsUrl);
    await sb.call("session.resume", { session_id: sid, after_seq: watermark });
    const since = await sb.call("session.events.since", { session_id: sid, after_seq: watermark });
    await sb.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === turn.turn_id, 20_000);
    await sc.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === turn.turn_id, 20_000);
    const bySeq = new Map<number, Frame<any>>();
    for (const f of [...seen, ...since.events, ...sb.sessionEvents(sid)]) bySeq.set(f.seq!, f);
    const all = [...bySeq.values()].sort((x, y) => x.seq! - y.seq!);
    const text = all.filter((f) => f.type === "message.delta").map((f) => f.payload.text).join("");
    const expected = Array.from({ length: 300 }, (_, i) => i + 1).join(" ");
    expect(text).toContain(expected);
    // Durable frames: B's reconnected client and C's live viewer agree, each once.
    const durable = (fs: Frame<any>[]) => fs.filter((f) => f.type !== "message.delta").map((f) => f.seq!);
    const onC = durable(sc.sessionEvents(sid));
    expect(new Set(onC).size).toBe(onC.length);
    expect(durable(all).filter((s) => s >= onC[0]!)).toEqual(onC);
    sb.close();
    sc.close();
  });

  it("SIGKILL node A mid-turn: a submit on B (no resume) takes the session over once A's lease is gone, A's turn shows interrupted", async () => {
    const store = pgTestUrl();
    const bus = redisTestUrl();
    const a = await node(store, { ...FAST, TETHER_ORPHAN_GRACE_S: "60" }, ["--bus", bus]);
    const b = await node(store, { ...FAST, TETHER_ORPHAN_GRACE_S: "60" }, ["--bus", bus]);
    const sa = await RpcSocket.open(a.wsUrl);
    const sid = (await sa.call("session.create", {})).session_id;
    const first = await sa.call("prompt.submit", { session_id: sid, text: "count to 5000" });
    await sa.waitFor(() => sa.sessionEvents(sid).filter((f) => f.type === "message.delta").length >= 20);
    await a.kill("SIGKILL");
    const sb = await RpcSocket.open(b.wsUrl);
    let next: any;
    for (let i = 0; i < 100 && !next; i++) {
      const answer = await sb.request("prompt.submit", { session_id: sid, text: "count to 3" });
      if (answer.result) next = answer.result;
      else {
        expect(answer.error!.code).toBe(4009); // A's lease is still running out
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    expect(next).toBeDefined();
    await sb.call("session.resume", { session_id: sid });
    const since = await sb.call("session.events.since", { session_id: sid, after_seq: 0 });
    const ends = since.events.filter((f: Frame<any>) => f.type === "turn.complete").map((f: Frame<any>) => [f.turn_id, f.payload.status]);
    expect(ends[0]).toEqual([first.turn_id, "interrupted"]);
    await sb.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === next.turn_id);
    const seqs = since.events.map((f: Frame) => f.seq!);
    expect(new Set(seqs).size).toBe(seqs.length);
    sb.close();
  });

  it("SIGSTOP node A past its lease, B takes over, SIGCONT A: A's late writes are refused, no interleaving", async () => {
    const { store, a, b, sa, sid } = await pairWithSession();
    const first = await sa.call("prompt.submit", { session_id: sid, text: "count to 100000" });
    await sa.waitFor(() => sa.sessionEvents(sid).filter((f) => f.type === "message.delta").length >= 20);
    await stopPastLease(a, store, sid);
    const sb = await RpcSocket.open(b.wsUrl);
    const snap = await sb.call("session.resume", { session_id: sid });
    expect(snap.messages.at(-1)).toMatchObject({ role: "assistant", status: "interrupted" });
    const interruptedText = snap.messages.at(-1).content;
    const next = await sb.call("prompt.submit", { session_id: sid, text: "count to 50" });
    a.child.kill("SIGCONT");
    await sb.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === next.turn_id, 20_000);
    // A runs on until its first write is fenced (what it logs), not for a fixed time.
    await eventually(async () => /stale owner: lease of session \S+ is no longer held/.test(a.stderr()));
    const events = (await sb.call("session.events.since", { session_id: sid, after_seq: 0 })).events as Frame<any>[];
    const seqs = events.map((f) => f.seq!);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
    // After B's takeover, A's turn never writes again: its only end is the interrupted one B wrote.
    const firstEnds = events.filter((f) => f.type === "turn.complete" && f.turn_id === first.turn_id);
    expect(firstEnds.map((f) => f.payload.status)).toEqual(["interrupted"]);
    const takeoverSeq = firstEnds[0]!.seq!;
    expect(events.filter((f) => f.seq! > takeoverSeq && f.turn_id === first.turn_id)).toEqual([]);
    const resumed = await sb.call("session.resume", { session_id: sid });
    const old = resumed.messages.find((m: any) => m.status === "interrupted");
    expect(old.content).toBe(interruptedText);
    expect(a.stderr()).toMatch(/stale owner: lease of session \S+ is no longer held/);
    sb.close();
  });

  it("A drops the runtime B took over: A's viewer hears session.resync, catches up on A and follows B's turns live", async () => {
    const { store, a, b, sa, sid } = await pairWithSession();
    // An SDK viewer on A too: what an app sees (each seq once, in order).
    const sdk = new TetherClient({ url: a.wsUrl, WebSocket: WebSocket as never, backoff: { initialMs: 20, maxMs: 300, jitter: 0.3 } });
    const seen: Frame<any>[] = [];
    sdk.subscribe(sid, (f) => seen.push(f as Frame<any>), { afterSeq: 0 });
    await sdk.connect();
    await sdk.resumeSession(sid);
    const first = await sa.call("prompt.submit", { session_id: sid, text: "count to 100000" });
    await sa.waitFor(() => sa.sessionEvents(sid).filter((f) => f.type === "message.delta").length >= 20);
    await stopPastLease(a, store, sid);
    const sb = await RpcSocket.open(b.wsUrl);
    await sb.call("session.resume", { session_id: sid });
    const watermark = Math.max(...sa.sessionEvents(sid).filter((f) => f.seq !== undefined).map((f) => f.seq!));
    a.child.kill("SIGCONT");
    // A finds its lease gone and drops its runtime: its viewer is told, not left silent.
    await sa.waitFor(() => sa.events.some((f) => f.type === "session.resync" && f.payload.session_id === sid), 20_000);
    // What the SDK does on it: `since` from its watermark, here on A (served from the store and the bus).
    const since = await sa.call("session.events.since", { session_id: sid, after_seq: watermark });
    expect(since.events.some((f: Frame<any>) => f.type === "turn.complete" && f.payload.status === "interrupted")).toBe(true);
    // And it follows B's next turn live, through A.
    const next = await sb.call("prompt.submit", { session_id: sid, text: "count to 5" });
    const end = await sa.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === next.turn_id, 20_000);
    expect(end.payload.status).toBe("complete");
    const seqs = sa.sessionEvents(sid).filter((f) => f.seq !== undefined).map((f) => f.seq!);
    expect(new Set(seqs).size).toBe(seqs.length);
    // The SDK on A: A's interrupted turn (written by B, from the catch-up), then B's turn live, each seq once.
    const ends = () => seen.filter((f) => f.type === "turn.complete");
    await sa.waitFor(() => ends().some((f) => f.turn_id === next.turn_id), 20_000);
    expect(ends().map((f) => [f.turn_id, f.payload.status])).toEqual([[first.turn_id, "interrupted"], [next.turn_id, "complete"]]);
    const sdkSeqs = seen.map((f) => f.seq!);
    expect(sdkSeqs).toEqual([...new Set(sdkSeqs)].sort((x, y) => x - y));
    const reply = seen.find((f) => f.type === "message.complete" && f.turn_id === next.turn_id && f.payload.role === "assistant");
    expect(reply?.payload.content).toBe("1 2 3 4 5");
    sdk.close();
    sa.close();
    sb.close();
  });

  it("A drops the runtime B took over: an SSE stream on A catches up past the bus ring and goes on from B, each seq once", async () => {
    // A small ring: B's turn while A is stopped outgrows it, so following the bus alone leaves a gap.
    const { store, a, b, sa, sid } = await pairWithSession({ smallRing: true });
    // What EventSource does: when the server ends the stream, reconnect with the last id it got.
    const sse = reconnectingSse(`${a.url}/api/sessions/${sid}/events?after_seq=0`);
    await sse.ready;
    const first = await sa.call("prompt.submit", { session_id: sid, text: "count to 100000" });
    await sse.waitFor((fs) => fs.filter((f) => f.type === "message.delta").length >= 20);
    await stopPastLease(a, store, sid);
    const { sb, turn: mid } = await takeOverAndRun(b, sid, "count to 40");
    a.child.kill("SIGCONT");
    await eventually(async () => /runtime superseded by a resume elsewhere/.test(a.stderr()), 20_000);
    const next = await sb.call("prompt.submit", { session_id: sid, text: "count to 5" });
    const ends = (fs: Frame<any>[]) => fs.filter((f) => f.type === "turn.complete").map((f) => [f.turn_id, f.payload.status]);
    await sse.waitFor((fs) => ends(fs).some(([t]) => t === next.turn_id), 20_000);
    expect(ends(sse.frames)).toEqual([[first.turn_id, "interrupted"], [mid.turn_id, "complete"], [next.turn_id, "complete"]]);
    const seqs = sse.frames.map((f) => f.seq!);
    expect(seqs).toEqual([...new Set(seqs)].sort((x, y) => x - y));
    const reply = (turn: string) => sse.frames.find((f) => f.type === "message.complete" && f.turn_id === turn && f.payload.role === "assistant");
    expect(reply(mid.turn_id)?.payload.content).toBe(Array.from({ length: 40 }, (_, i) => i + 1).join(" "));
    expect(reply(next.turn_id)?.payload.content).toBe("1 2 3 4 5");
    // Every durable frame the new owner holds reached the stream.
    const stored = (await sb.call("session.events.since", { session_id: sid, after_seq: 0, include_transient: false })).events as Frame<any>[];
    const got = new Set(seqs);
    expect(stored.filter((f) => !got.has(f.seq!)).map((f) => `${f.seq}:${f.type}`)).toEqual([]);
    sse.close();
    sa.close();
    sb.close();
  });
  it("without a bus, A drops the runtime B took over: the SSE stream on A ends (its reconnect gets the route's answer), not silence", async () => {
    const { store, a, b, sa, sid } = await pairWithSession({ bus: false });
    const sse = await openSse(`${a.url}/api/sessions/${sid}/events?after_seq=0`);
    await sa.call("prompt.submit", { session_id: sid, text: "count to 100000" });
    await sse.waitFor((evs) => evs.filter((e) => e.event === "message.delta").length >= 20);
    await stopPastLease(a, store, sid);
    const sb = await RpcSocket.open(b.wsUrl);
    await sb.call("session.resume", { session_id: sid });
    a.child.kill("SIGCONT");
    await eventually(async () => /runtime superseded by a resume elsewhere/.test(a.stderr()), 20_000);
    const timeout = new Promise<string>((resolve) => setTimeout(() => resolve("still open after 10 s"), 10_000));
    expect(await Promise.race([sse.ended.then(() => "ended"), timeout])).toBe("ended");
    expect(sse.events.at(-1)?.event).toBe("session.resync");
    const lastId = sse.events.filter((e) => e.id !== undefined).at(-1)!.id!;
    // A no longer serves it (B owns it, and without a bus A cannot follow B): the reconnect says so...
    const again = await openSse(`${a.url}/api/sessions/${sid}/events`, { headers: { "last-event-id": lastId } });
    expect(again.status).toBe(409);
    again.close();
    // ...and the same reconnect on B (where a balancer would send it) gets the rest after that id.
    const onB = await openSse(`${b.url}/api/sessions/${sid}/events`, { headers: { "last-event-id": lastId } });
    await onB.waitFor((evs) => evs.some((e) => e.event === "turn.complete"));
    const rest = onB.events.filter((e) => e.id !== undefined && e.event !== "session.catchup").map((e) => Number(e.id));
    expect(Math.min(...rest)).toBeGreaterThan(Number(lastId));
    expect(JSON.parse(onB.events.find((e) => e.event === "turn.complete")!.data).payload.status).toBe("interrupted");
    onB.close();
    sse.close();
    sa.close();
    sb.close();
  });

  it("A drops the runtime B took over: the runs SSE on A ends, and its Last-Event-ID reconnect gets the rest, each event once", async () => {
    const { store, a, b, sa, sid } = await pairWithSession({ smallRing: true });
    const started = await fetch(`${a.url}/v1/runs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ input: "count to 100000", session_id: sid }) });
    const run = (await started.json()) as { run_id: string };
    const terminal = (ev: SseEvent) => ["run.completed", "run.failed", "run.cancelled"].includes(ev.event ?? "");
    const sse = reconnectingSse(`${a.url}/v1/runs/${run.run_id}/events`, terminal);
    await sse.ready;
    await eventually(async () => sse.events.filter((e) => e.event === "message.delta").length >= 20);
    await stopPastLease(a, store, sid);
    const { sb } = await takeOverAndRun(b, sid, "count to 40");
    a.child.kill("SIGCONT");
    await eventually(async () => sse.events.some(terminal), 15_000);
    expect(sse.events.at(-1)!.event).toBe("run.failed");
    expect(JSON.parse(sse.events.at(-1)!.data)).toMatchObject({ status: "interrupted" });
    const ids = sse.events.map((e) => Number(e.id));
    expect(ids).toEqual([...new Set(ids)].sort((x, y) => x - y));
    expect(sse.connections()).toBeGreaterThan(1);
    sse.close();
    sa.close();
    sb.close();
  });

  it("A drops the runtime B took over: a streamed Response on A ends with the Response the log holds, not silence", async () => {
    const { store, a, b } = await pair({ smallRing: true });
    const openai = new OpenAI({ baseURL: `${a.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const stream = await openai.responses.create({ model: "demo", stream: true, input: "count to 100000" });
    const types: string[] = [];
    const outcome = (async () => {
      try {
        for await (const e of stream) types.push(e.type);
        return types.at(-1);
      } catch (err) {
        return String(err);
      }
    })();
    await eventually(async () => types.filter((t) => t === "response.output_text.delta").length >= 20);
    // The Response's session: the only one with a lease.
    const sid = (await pgQuery<{ session_id: string }>(store, "SELECT session_id FROM leases", []))[0]!.session_id;
    await stopPastLease(a, store, sid);
    const { sb } = await takeOverAndRun(b, sid, "count to 40");
    a.child.kill("SIGCONT");
    const timeout = new Promise<string>((resolve) => setTimeout(() => resolve("still streaming after 15 s"), 15_000));
    expect(await Promise.race([outcome, timeout])).toMatch(/^response\.(incomplete|failed|completed)$/);
    sb.close();
  });

  it("A drops the runtime B took over: a streamed chat completion on A ends with a session_moved error, not silence", async () => {
    // A small ring: following the bus alone cannot bring A's turn to its end any more.
    const { store, a, b } = await pair({ smallRing: true });
    const openai = new OpenAI({ baseURL: `${a.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const { data: stream, response } = await openai.chat.completions
      .create({ model: "demo", stream: true, messages: [{ role: "user", content: "count to 100000" }] })
      .withResponse();
    const sid = response.headers.get("x-session-id")!;
    let chunks = 0;
    const outcome = (async () => {
      try {
        for await (const _ of stream) chunks++;
        return "ended without error";
      } catch (err) {
        return err instanceof OpenAI.APIError ? String(err.code) : String(err);
      }
    })();
    await eventually(async () => chunks >= 20);
    await stopPastLease(a, store, sid);
    const { sb } = await takeOverAndRun(b, sid, "count to 40");
    a.child.kill("SIGCONT");
    const timeout = new Promise<string>((resolve) => setTimeout(() => resolve("still streaming after 15 s"), 15_000));
    expect(await Promise.race([outcome, timeout])).toBe("session_moved");
    sb.close();
  });
});

/** Nodes A and B on one PostgreSQL (and one Redis unless `bus: false`); no orphan reaping within a test. */
async function pair(opts: { bus?: boolean; smallRing?: boolean } = {}) {
  const store = pgTestUrl();
  const env: Record<string, string> = { ...FAST, TETHER_ORPHAN_GRACE_S: "60", TETHER_LOG_LEVEL: "info" };
  if (opts.smallRing) env.TETHER_CONFIG = smallRingConfig();
  const extra = opts.bus === false ? [] : ["--bus", redisTestUrl()];
  const [a, b] = [await node(store, env, extra), await node(store, env, extra)];
  return { store, a, b };
}

/** `pair`, and a session created through a socket on A. */
async function pairWithSession(opts: { bus?: boolean; smallRing?: boolean } = {}) {
  const nodes = await pair(opts);
  const sa = await RpcSocket.open(nodes.a.wsUrl);
  const sid = (await sa.call("session.create", {})).session_id as string;
  return { ...nodes, sa, sid };
}

/** Stops node A (SIGSTOP) and waits until its lease of `sid` has run out, as the store sees it. */
async function stopPastLease(a: SpawnedGateway, store: string, sid: string): Promise<void> {
  a.child.kill("SIGSTOP");
  await eventually(async () => {
    const [lease] = await pgQuery<{ expires_at: string }>(store, "SELECT expires_at FROM leases WHERE session_id = $1", [sid]);
    return lease !== undefined && Number(lease.expires_at) < Date.now();
  });
}

/** A config file with a small bus ring: a turn while A is stopped outgrows it. */
function smallRingConfig(): string {
  const config = join(mkdtempSync(join(tmpdir(), "tether-ring-")), "config.yaml");
  writeFileSync(config, "limits:\n  ring_frames: 16\n");
  return config;
}

/** B resumes the session (taking it over) and runs one turn of `text` to its end. */
async function takeOverAndRun(b: SpawnedGateway, sid: string, text: string) {
  const sb = await RpcSocket.open(b.wsUrl);
  await sb.call("session.resume", { session_id: sid });
  const turn = await sb.call("prompt.submit", { session_id: sid, text });
  await sb.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === turn.turn_id, 20_000);
  return { sb, turn };
}

/** The session's frames (events with an `id` and a seq) over as many connections as it takes. */
function reconnectingSse(url: string, last: (ev: SseEvent) => boolean = () => false) {
  const frames: Frame<any>[] = [];
  const events: SseEvent[] = [];
  let lastId: string | undefined;
  let conn: SseConnection | undefined;
  let closed = false;
  let connections = 0;
  const loop = async () => {
    while (!closed && !events.some(last)) {
      connections++;
      const c = await openSse(url, { headers: lastId === undefined ? {} : { "last-event-id": lastId } });
      conn = c;
      if (c.status !== 200) throw new Error(`SSE answered ${c.status}`);
      let seen = 0;
      const take = (evs: SseEvent[]) => {
        for (const ev of evs.slice(seen)) {
          if (ev.id !== undefined) lastId = ev.id;
          events.push(ev);
          const data = JSON.parse(ev.data);
          if (typeof data.seq === "number" && ev.event === data.type) frames.push(data);
        }
        seen = evs.length;
      };
      const pump = setInterval(() => take(c.events), 10);
      await c.ended;
      clearInterval(pump);
      take(c.events);
    }
  };
  void loop().catch(() => undefined);
  return {
    frames,
    events,
    connections: () => connections,
    ready: eventually(async () => conn !== undefined),
    async waitFor(pred: (fs: Frame<any>[]) => boolean, timeoutMs = 10_000) {
      await eventually(async () => pred(frames), timeoutMs);
    },
    close() {
      closed = true;
      conn?.close();
    },
  };
}
