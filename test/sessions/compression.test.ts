/**
 * Compression and the live tip, on a SessionManager over a real SQLite file with a FakeClock:
 * rotation at the threshold, viewers following, the todo list and protected tail carrying over,
 * resume/submit of the parent landing on the tip, /compress, failures backing off, config reload.
 */
import { afterEach, describe, expect, it } from "vitest";
import { resolveConfig, type ConfigInput } from "../../src/config/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import { TetherError } from "../../src/protocol/index.js";
import { buildProviderCatalog } from "../../src/agent/provider-catalog.js";
import type { SessionRuntime } from "../../src/sessions/core/session-runtime.js";
import { tempDbPath } from "../support/temp-db.js";
import { ME, settle, startHarness, TestViewer, type Harness } from "../support/manager-harness.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

const harnesses: Harness[] = [];
const upstreams: FakeOpenAI[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    sessionRooms(h.manager).lifecycle.stop();
    await h.store.close();
  }
  for (const ai of upstreams.splice(0)) await ai.close();
});

async function harness(config: ConfigInput = {}, clock = new FakeClock()) {
  const h = await startHarness({
    dbPath: tempDbPath(),
    clock,
    processId: "p1",
    demoDelayMs: 0,
    lifecycle: { startup_sweep: false },
    config,
  });
  harnesses.push(h);
  return h;
}

const runtimeOf = (h: Harness, id: string): SessionRuntime | undefined => [...sessionRooms(h.manager).registry.values()].find((rt) => rt.id === id);

async function idle(h: Harness, id: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    await settle(5);
    const rt = runtimeOf(h, id);
    if (!rt || (!rt.running && rt.turns.length === 0)) return;
  }
  throw new Error(`session ${id} never became idle`);
}

/** Submits and waits until the session (or its continuation) is idle again. */
async function turn(h: Harness, id: string, text: string, requestId?: string) {
  const r = await h.manager.submit(ME, id, text, requestId);
  await idle(h, r.session_id ?? id);
  const row = await h.store.getSession(r.session_id ?? id);
  if (row?.flags.continued_in) await idle(h, row.flags.continued_in);
  return r;
}

describe("compression with the demo provider", () => {
  it("rotates at the threshold; viewers follow; todo, head, summary and tail carry over; the parent resolves to the tip", async () => {
    const h = await harness({ compression: { threshold_tokens: 200, protect_first_n: 1, protect_last_n: 4 } });
    const viewer = new TestViewer("v");
    const snap = await h.manager.create(ME, {}, viewer);
    const parent = snap.session_id;
    await turn(h, parent, "todo: write tests; ship it");
    const counts: number[] = [];
    let rotatedAt = -1;
    for (let i = 0; i < 12 && rotatedAt < 0; i++) {
      const rt = runtimeOf(h, parent)!;
      counts.push(sessionRooms(h.manager).compressor.tokens(rt));
      await turn(h, parent, `hello number ${i}`);
      if ((await h.store.getSession(parent))!.ended_at !== null) rotatedAt = i;
    }
    expect(rotatedAt).toBeGreaterThan(0);
    const parentRow = (await h.store.getSession(parent))!;
    expect(parentRow.end_reason).toBe("compression");
    const child = parentRow.flags.continued_in!;
    const childRow = (await h.store.getSession(child))!;
    expect(childRow).toMatchObject({ parent_session_id: parent, ended_at: null });
    // The todo list carried over at the same revision: it never goes backwards.
    expect(childRow.todo).toEqual({ revision: 1, items: [{ content: "write tests", status: "pending" }, { content: "ship it", status: "pending" }] });

    // session.rotated on both sessions, and the viewer saw the parent's.
    const rotated = viewer.frames.find((f) => f.type === "session.rotated")!;
    expect(rotated).toMatchObject({ session_id: parent, payload: { from: parent, to: child, reason: "compression" } });
    const childEvents = await h.store.readEvents(child, 0, 100);
    expect(childEvents.map((e) => e.type)).toEqual(["session.info", "todo.updated", "session.rotated", "session.notice"]);

    // Head (1), summary, tail (4) — the tail does not start with a tool result.
    const parentMsgs = await h.store.loadMessages(parent);
    const childMsgs = await h.store.loadMessages(child);
    expect(childMsgs[0]!.content).toBe(parentMsgs[0]!.content);
    expect(childMsgs[1]).toMatchObject({ role: "user", display_kind: "compression_summary" });
    expect(childMsgs[1]!.content).toContain("Summary of");
    expect(childMsgs.slice(2).map((m) => m.content)).toEqual(parentMsgs.slice(-4).map((m) => m.content));
    expect(childMsgs[2]!.role).not.toBe("tool");

    // The viewer follows the child without a resume: the next prompt, aimed at the parent id, lands on the tip.
    const before = viewer.frames.length;
    const submitted = await turn(h, parent, "after the rotation");
    expect(submitted).toMatchObject({ session_id: child, resolved_from: parent, status: "started" });
    const later = viewer.frames.slice(before);
    expect(later.some((f) => f.type === "turn.complete" && f.session_id === child)).toBe(true);
    expect(later.filter((f) => f.turn_id === submitted.turn_id).every((f) => f.session_id === child)).toBe(true);
    expect(later.some((f) => f.session_id === parent)).toBe(false);

    // A resume of the parent id lands on the tip, with resolved_from.
    const resumed = await h.manager.resume(ME, parent, new TestViewer("w"));
    expect(resumed).toMatchObject({ session_id: child, resolved_from: parent });
    expect(resumed.todo.revision).toBe(1);
    // And the count was under the threshold before the rotating turn.
    expect(Math.max(...counts)).toBeLessThan(200);
  });

  it("a write aimed at the compression-closed session fails with 4010 and data.live_tip", async () => {
    const h = await harness({ compression: { threshold_tokens: 1_000_000, protect_first_n: 1, protect_last_n: 1 } });
    const snap = await h.manager.create(ME, {}, new TestViewer("v"));
    await turn(h, snap.session_id, "one");
    await turn(h, snap.session_id, "two");
    await turn(h, snap.session_id, "/compress");
    const child = (await h.store.getSession(snap.session_id))!.flags.continued_in!;
    expect(child).toBeDefined();
    const err = await h.manager.update(ME, snap.session_id, { title: "x" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TetherError);
    expect(err).toMatchObject({ code: 4010, data: { live_tip: child, end_reason: "compression" } });
    const since = await h.manager.since(ME, snap.session_id, 0).catch((e: unknown) => e);
    expect(since).toMatchObject({ code: 4010, data: { live_tip: child } });
    // Reads of the parent's own transcript stay possible.
    expect((await h.manager.messages(ME, snap.session_id, undefined)).messages.length).toBe(4);
  });

  it("/compress compresses on demand through the same path, as a turn of its own", async () => {
    const h = await harness({ compression: { threshold_tokens: 1_000_000, protect_first_n: 1, protect_last_n: 1 } });
    const viewer = new TestViewer("v");
    const snap = await h.manager.create(ME, {}, viewer);
    await turn(h, snap.session_id, "one");
    await turn(h, snap.session_id, "two");
    expect((await h.store.getSession(snap.session_id))!.ended_at).toBeNull(); // far below the threshold
    const r = await turn(h, snap.session_id, "/compress");
    const types = viewer.frames.filter((f) => f.turn_id === r.turn_id).map((f) => f.type);
    expect(types).toEqual(["turn.start", "turn.complete"]);
    expect(viewer.frames.find((f) => f.type === "session.rotated")!.payload).toMatchObject({
      from: snap.session_id,
      reason: "compression_manual",
      summarized_messages: 2,
    });
    // "/compress" is a command, not a message: the transcript has none.
    expect((await h.store.loadMessages(snap.session_id)).some((m) => m.content.startsWith("/compress"))).toBe(false);
  });

  it("a turn with settings of its own aimed at the compressed id: its call options, history and prompt all land on the live tip (one resolution)", async () => {
    const h = await harness({ compression: { threshold_tokens: 1_000_000, protect_first_n: 1, protect_last_n: 1 } });
    const snap = await h.manager.create(ME, {}, new TestViewer("v"));
    await turn(h, snap.session_id, "one");
    await turn(h, snap.session_id, "two");
    await turn(h, snap.session_id, "/compress");
    const child = (await h.store.getSession(snap.session_id))!.flags.continued_in!;
    expect(child).toBeDefined();
    const callOptions = { params: { temperature: 0.25 } };
    const started = await h.manager.startTurn({
      caller: ME,
      session: { id: snap.session_id },
      history: [{ role: "user", content: "earlier" }],
      text: "count to 2",
      callOptions,
    });
    expect(started.result).toMatchObject({ session_id: child, resolved_from: snap.session_id, status: "started" });
    expect(runtimeOf(h, child)!.callOptions).toEqual(callOptions);
    await idle(h, child);
    const contents = (await h.store.loadMessages(child)).map((m) => m.content);
    expect(contents.indexOf("earlier")).toBeGreaterThanOrEqual(0);
    expect(contents.indexOf("earlier")).toBeLessThan(contents.indexOf("count to 2"));
  });

  it("a request_id is one turn across the lineage: retried at the parent after a rotation, it is a duplicate", async () => {
    const h = await harness({ compression: { threshold_tokens: 1_000_000, protect_first_n: 1, protect_last_n: 1 } });
    const snap = await h.manager.create(ME, {}, new TestViewer("v"));
    const first = await turn(h, snap.session_id, "one", "req-1");
    await turn(h, snap.session_id, "two");
    await turn(h, snap.session_id, "/compress");
    const again = await h.manager.submit(ME, snap.session_id, "one", "req-1");
    expect(again).toMatchObject({ status: "duplicate", turn_id: first.turn_id });
  });

  it("removing a compression key on reload restores its default in live sessions", async () => {
    const providers = { x: { base_url: "http://127.0.0.1:9/v1", models: ["m"], context_length: 1000 } };
    const h = await harness({ providers, compression: { threshold: 0.3 } });
    const snap = await h.manager.create(ME, { provider: "x", model: "m" }, new TestViewer("v"));
    const rt = runtimeOf(h, snap.session_id)!;
    expect(sessionRooms(h.manager).compressor.threshold(rt)).toBe(300);
    const withCap = resolveConfig({}, { providers, compression: { threshold: 0.25, threshold_tokens: 100 } });
    h.manager.applyConfig(withCap, buildProviderCatalog(withCap, h.clock));
    expect(sessionRooms(h.manager).compressor.threshold(rt)).toBe(100);
    const removed = resolveConfig({}, { providers });
    h.manager.applyConfig(removed, buildProviderCatalog(removed, h.clock));
    expect(sessionRooms(h.manager).compressor.threshold(rt)).toBe(500); // the 0.5 default, no cap
    // The demo has no context window: only the cap (or /compress) compresses it.
    const demo = await h.manager.create(ME, { provider: "demo" }, new TestViewer("w"));
    expect(sessionRooms(h.manager).compressor.threshold(runtimeOf(h, demo.session_id)!)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe("compression with the fake upstream", () => {
  async function upstreamHarness(compression: Record<string, unknown>) {
    const ai = await startFakeOpenAI();
    upstreams.push(ai);
    const h = await harness({
      providers: { fake: { base_url: ai.url, models: ["m"], context_length: 200 } },
      compression: { protect_first_n: 1, protect_last_n: 1, ...compression },
    });
    return { ai, h };
  }
  const usage = (total: number) => ({ prompt_tokens: total - 5, completion_tokens: 5, total_tokens: total });

  it("counts with the provider's usage against context_length × threshold", async () => {
    const { ai, h } = await upstreamHarness({ threshold: 0.5 });
    const snap = await h.manager.create(ME, { provider: "fake", model: "m" }, new TestViewer("v"));
    ai.script(reply.text(["first"], { usage: usage(40) }));
    await turn(h, snap.session_id, "one");
    expect((await h.store.getSession(snap.session_id))!.ended_at).toBeNull();
    ai.script(reply.text(["second"], { usage: usage(100) }), reply.text(["the summary"]));
    await turn(h, snap.session_id, "two");
    const row = (await h.store.getSession(snap.session_id))!;
    expect(row.end_reason).toBe("compression");
    // The summary request carried the middle of the transcript.
    const summaryReq = ai.requests[2]!.body;
    expect(summaryReq.messages[1].content).toContain("assistant: first");
    expect(summaryReq.messages[1].content).toContain("user: two");
    const childMsgs = await h.store.loadMessages(row.flags.continued_in!);
    expect(childMsgs.map((m) => m.content)).toEqual(["one", expect.stringContaining("the summary"), "second"]);
  });

  it("a failed summary leaves the session unchanged, backs off 60 s, 300 s, 900 s, and says so", async () => {
    const { ai, h } = await upstreamHarness({ threshold: 0.5 });
    const viewer = new TestViewer("v");
    const snap = await h.manager.create(ME, { provider: "fake", model: "m" }, viewer);
    ai.script(reply.text(["first"], { usage: usage(40) }));
    await turn(h, snap.session_id, "one");
    ai.script(reply.text(["second"], { usage: usage(150) }), reply.httpError(500, "upstream broke"));
    await turn(h, snap.session_id, "two");
    const notices = () => viewer.frames.filter((f) => f.type === "session.notice").map((f) => f.payload);
    expect((await h.store.getSession(snap.session_id))!.ended_at).toBeNull();
    expect(notices()).toEqual([expect.objectContaining({ level: "warning", code: "compression_failed", retry_in_s: 60 })]);
    expect(await h.store.loadMessages(snap.session_id)).toHaveLength(4);

    // Another turn inside the back-off does not try again.
    ai.script(reply.text(["third"], { usage: usage(160) }));
    await turn(h, snap.session_id, "three");
    expect(ai.pending).toBe(0);
    expect(ai.requests).toHaveLength(4);

    // The back-off ends: the gateway retries by itself (fails again → 300 s).
    ai.script(reply.httpError(503, "still broken"));
    await h.clock.advance(60_000);
    await idle(h, snap.session_id);
    expect(notices().map((n) => n.retry_in_s)).toEqual([60, 300]);
    ai.script(reply.httpError(503, "still broken"));
    await h.clock.advance(300_000);
    await idle(h, snap.session_id);
    expect(notices().map((n) => n.retry_in_s)).toEqual([60, 300, 900]);
    expect((await h.store.getSession(snap.session_id))!.ended_at).toBeNull();

    // Then it works: the session rotates.
    ai.script(reply.text(["a fine summary"]));
    await h.clock.advance(900_000);
    await idle(h, snap.session_id);
    const row = (await h.store.getSession(snap.session_id))!;
    expect(row.end_reason).toBe("compression");
    expect(viewer.frames.some((f) => f.type === "session.rotated")).toBe(true);
  });

  it("/compress with a failing summary ends its turn with a classified error and changes nothing", async () => {
    const { ai, h } = await upstreamHarness({ threshold_tokens: 1_000_000 });
    const viewer = new TestViewer("v");
    const snap = await h.manager.create(ME, { provider: "fake", model: "m" }, viewer);
    ai.script(reply.text(["first"]), reply.text(["second"]));
    await turn(h, snap.session_id, "one");
    await turn(h, snap.session_id, "two");
    ai.script(reply.httpError(429, "slow down"));
    const r = await turn(h, snap.session_id, "/compress");
    const err = viewer.frames.find((f) => f.type === "turn.error" && f.turn_id === r.turn_id)!;
    expect(err.payload.error).toMatchObject({ layer: "provider", code: "rate_limited", retryable: true });
    expect(viewer.frames.find((f) => f.type === "turn.complete" && f.turn_id === r.turn_id)!.payload.status).toBe("error");
    expect((await h.store.getSession(snap.session_id))!.ended_at).toBeNull();
  });
});
