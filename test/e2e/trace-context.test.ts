/**
 * Traces that continue the caller's, and an exporter that fails — end to end: a real `tether
 * serve` exporting to a local OTLP/HTTP receiver (a real HTTP server on 127.0.0.1 decoding each
 * export).
 *
 * - A W3C `traceparent` (and `tracestate`) on `prompt.submit` or on an HTTP request that starts a
 *   turn makes the turn part of the caller's trace: the frames' `trace_id` is the caller's trace
 *   id, the `tether.turn` span is a child of the caller's span and carries its tracestate, the
 *   model calls hang under the turn. An unsampled caller (flags 00) gets no spans; a broken header
 *   starts a new trace (as the spec asks of headers); a broken param is refused by name.
 * - A collector that refuses exports is counted (`tether_trace_export_failures_total`, the spans
 *   lost) and logged once when it starts failing and once when it recovers, not per batch.
 * - A collector that accepts and never answers does not hold SIGTERM past the stop's budget
 *   (`lifecycle.shutdown_flush_s`): the exporter's own timeout is 10 s.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseTraceparent, traceparentProblem, tracestateProblem } from "../../src/protocol/index.js";
import { turnSpanId } from "../../src/lib/tracing.js";
import { OtlpReceiver, type ReceivedSpan } from "../support/otlp-receiver.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";

const CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";
const TRACESTATE = "vendor=opaque-1,other@tenant=x";

const named = (spans: ReceivedSpan[], name: string, traceId: string) => spans.filter((s) => s.name === name && s.traceId === traceId);

async function tracedGateway(receiver: OtlpReceiver, env: Record<string, string> = {}): Promise<SpawnedGateway> {
  const dir = mkdtempSync(join(tmpdir(), "tether-trace-ctx-"));
  return spawnGateway(["--port", "0", "--db", join(dir, "tether.db")], {
    TETHER_DEMO_DELAY_MS: "1",
    TETHER_LOG_LEVEL: "info",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_BSP_SCHEDULE_DELAY: "50",
    ...env,
  });
}

async function turn(sock: RpcSocket, params: Record<string, unknown>): Promise<{ session_id: string; turn_id: string; trace_id: string }> {
  const snap = await sock.call("session.create", {});
  const sub = await sock.call("prompt.submit", { session_id: snap.session_id, text: "hello", ...params });
  await sock.waitForEvent(snap.session_id, (f) => f.type === "turn.complete" && f.payload.turn_id === sub.turn_id);
  return { session_id: snap.session_id, turn_id: sub.turn_id, trace_id: sub.trace_id };
}

describe("W3C trace context (protocol/trace-context.ts)", () => {
  it("reads version 00 and later versions, refuses what the spec refuses, keeps a valid tracestate only", () => {
    expect(parseTraceparent(`00-${CALLER_TRACE}-${CALLER_SPAN}-01`, TRACESTATE)).toEqual({ traceId: CALLER_TRACE, spanId: CALLER_SPAN, sampled: true, tracestate: TRACESTATE });
    expect(parseTraceparent(`00-${CALLER_TRACE}-${CALLER_SPAN}-00`)).toEqual({ traceId: CALLER_TRACE, spanId: CALLER_SPAN, sampled: false });
    // A later version with more fields is read as 00.
    expect(parseTraceparent(`01-${CALLER_TRACE}-${CALLER_SPAN}-09-future`)?.sampled).toBe(true);
    for (const bad of [
      `00-${"0".repeat(32)}-${CALLER_SPAN}-01`,
      `00-${CALLER_TRACE}-${"0".repeat(16)}-01`,
      `ff-${CALLER_TRACE}-${CALLER_SPAN}-01`,
      `00-${CALLER_TRACE.toUpperCase()}-${CALLER_SPAN}-01`,
      `00-${CALLER_TRACE}-${CALLER_SPAN}-01-extra`,
      "garbage",
    ]) {
      expect(traceparentProblem(bad), bad).toBeDefined();
      expect(parseTraceparent(bad)).toBeUndefined();
    }
    expect(tracestateProblem("a=1,b=2")).toBeUndefined();
    expect(tracestateProblem("no equals sign")).toBeDefined();
    expect(tracestateProblem("x".repeat(600))).toBeDefined();
    expect(parseTraceparent(`00-${CALLER_TRACE}-${CALLER_SPAN}-01`, "not a list member")).not.toHaveProperty("tracestate");
  });
});

describe("a turn continues the caller's trace (tether serve → OTLP/HTTP JSON)", () => {
  let receiver: OtlpReceiver;
  let gw: SpawnedGateway;
  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    gw = await tracedGateway(receiver);
  });
  afterAll(async () => {
    await gw?.kill("SIGKILL");
    await receiver?.close();
  });

  it("from prompt.submit's traceparent and tracestate: the caller's trace id, the turn span under the caller's span", async () => {
    const sock = await RpcSocket.open(gw.wsUrl);
    const t = await turn(sock, { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`, tracestate: TRACESTATE });
    expect(t.trace_id).toBe(CALLER_TRACE);
    const frames = sock.sessionEvents(t.session_id).filter((f) => f.turn_id === t.turn_id);
    expect(new Set(frames.map((f) => f.trace_id))).toEqual(new Set([CALLER_TRACE]));
    await receiver.waitFor((spans) => named(spans, "tether.turn", CALLER_TRACE).length > 0 && named(spans, "chat demo", CALLER_TRACE).length > 0);
    const [span] = named(receiver.spans, "tether.turn", CALLER_TRACE);
    expect(span!.parentSpanId).toBe(CALLER_SPAN);
    expect(span!.spanId).toBe(turnSpanId(t.turn_id));
    expect(span!.traceState).toBe(TRACESTATE);
    expect(span!.attributes["tether.turn_id"]).toBe(t.turn_id);
    for (const call of named(receiver.spans, "chat demo", CALLER_TRACE)) expect(call.parentSpanId).toBe(span!.spanId);
    sock.close();
  });

  it("from the traceparent header of an HTTP request that starts a turn (sessions API, chat completions)", async () => {
    const sock = await RpcSocket.open(gw.wsUrl);
    const snap = await sock.call("session.create", {});
    const viaSessions = "11111111111111111111111111111111";
    const res = await fetch(`${gw.url}/api/sessions/${snap.session_id}/prompt`, {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: `00-${viaSessions}-${CALLER_SPAN}-01` },
      body: JSON.stringify({ text: "hi" }),
    });
    expect(res.status).toBe(202);
    expect(((await res.json()) as { trace_id: string }).trace_id).toBe(viaSessions);

    const viaChat = "22222222222222222222222222222222";
    const chat = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: `00-${viaChat}-${CALLER_SPAN}-01`, tracestate: "k=v" },
      body: JSON.stringify({ model: "demo", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(chat.status).toBe(200);
    await chat.json();
    await receiver.waitFor((spans) => named(spans, "tether.turn", viaSessions).length > 0 && named(spans, "tether.turn", viaChat).length > 0);
    expect(named(receiver.spans, "tether.turn", viaSessions)[0]!.parentSpanId).toBe(CALLER_SPAN);
    const chatTurn = named(receiver.spans, "tether.turn", viaChat)[0]!;
    expect(chatTurn.parentSpanId).toBe(CALLER_SPAN);
    expect(chatTurn.traceState).toBe("k=v");
    sock.close();
  });

  it("an unsampled caller gets no spans (its trace id still marks the frames); a broken header starts a new trace", async () => {
    const sock = await RpcSocket.open(gw.wsUrl);
    const unsampled = "33333333333333333333333333333333";
    const quiet = await turn(sock, { traceparent: `00-${unsampled}-${CALLER_SPAN}-00` });
    expect(quiet.trace_id).toBe(unsampled);
    const snap = await sock.call("session.create", {});
    const res = await fetch(`${gw.url}/api/sessions/${snap.session_id}/prompt`, {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: "00-not-a-trace-01" },
      body: JSON.stringify({ text: "hi" }),
    });
    expect(res.status).toBe(202);
    const fresh = ((await res.json()) as { trace_id: string }).trace_id;
    expect(fresh).toMatch(/^[0-9a-f]{32}$/);
    // Spans of the later turn arrived: the unsampled one's would have come before them.
    await receiver.waitFor((spans) => named(spans, "tether.turn", fresh).length > 0);
    expect(named(receiver.spans, "tether.turn", fresh)[0]!.parentSpanId).toBe("");
    expect(receiver.spans.filter((s) => s.traceId === unsampled)).toEqual([]);
    sock.close();
  });

  it("refuses a broken traceparent or tracestate param by name, and a tracestate without its traceparent", async () => {
    const sock = await RpcSocket.open(gw.wsUrl);
    const snap = await sock.call("session.create", {});
    for (const [params, field] of [
      [{ traceparent: "00-xyz-01" }, "traceparent"],
      [{ traceparent: `00-${"0".repeat(32)}-${CALLER_SPAN}-01` }, "traceparent"],
      [{ traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`, tracestate: "no equals" }, "tracestate"],
      [{ tracestate: "a=b" }, "tracestate"],
    ] as const) {
      const answer = await sock.request("prompt.submit", { session_id: snap.session_id, text: "hi", ...params });
      expect(answer.error?.code, JSON.stringify(params)).toBe(-32602);
      expect(JSON.stringify(answer.error)).toContain(field);
    }
    sock.close();
  });
});

describe("a failing collector", () => {
  it("is counted on /metrics and logged once when it starts failing and once when it recovers", async () => {
    const receiver = await OtlpReceiver.start();
    receiver.mode = "fail";
    const gw = await tracedGateway(receiver);
    try {
      const sock = await RpcSocket.open(gw.wsUrl);
      await turn(sock, {});
      await receiver.waitFor(() => receiver.refused >= 1);
      await turn(sock, {});
      await receiver.waitFor(() => receiver.refused >= 2);
      const failing = () => gw.stderr().split("\n").filter((l) => l.includes("trace export failing"));
      await receiver.waitFor(() => failing().length > 0);
      const metrics = await (await fetch(`${gw.url}/metrics`)).text();
      const count = (name: string) => Number(new RegExp(`^${name} (\\d+)`, "m").exec(metrics)?.[1] ?? NaN);
      expect(count("tether_trace_export_failures_total")).toBeGreaterThanOrEqual(2);
      expect(count("tether_trace_spans_dropped_total")).toBeGreaterThanOrEqual(2);

      receiver.mode = "ok";
      const back = await turn(sock, {});
      await receiver.waitFor((spans) => named(spans, "tether.turn", back.trace_id).length > 0);
      const recovered = () => gw.stderr().split("\n").filter((l) => l.includes("trace export recovered"));
      await receiver.waitFor(() => recovered().length > 0);
      // Once per change of state, not once per failed batch.
      expect(failing()).toHaveLength(1);
      expect(JSON.parse(failing()[0]!)).toMatchObject({ level: 40, endpoint: `${receiver.url}/v1/traces` });
      expect(recovered()).toHaveLength(1);
      expect(JSON.parse(recovered()[0]!).failed_exports).toBeGreaterThanOrEqual(2);
      sock.close();
    } finally {
      await gw.kill("SIGKILL");
      await receiver.close();
    }
  });

  it("that accepts and never answers does not hold SIGTERM past the stop's budget", async () => {
    const receiver = await OtlpReceiver.start();
    receiver.mode = "hang";
    // Spans stay buffered until the stop flushes them: the flush meets the hanging collector.
    const gw = await tracedGateway(receiver, { OTEL_BSP_SCHEDULE_DELAY: "60000", TETHER_SHUTDOWN_FLUSH_S: "1" });
    try {
      const sock = await RpcSocket.open(gw.wsUrl);
      await turn(sock, {});
      sock.close();
      const started = Date.now();
      expect(await gw.kill("SIGTERM")).toBe(0);
      const took = Date.now() - started;
      expect(receiver.refused).toBeGreaterThanOrEqual(1);
      // The budget is 1 s; the exporter alone would wait 10 s for an answer.
      expect(took).toBeLessThan(5_000);
      expect(gw.stderr()).toContain("traces not flushed");
    } finally {
      await gw.kill("SIGKILL");
      await receiver.close();
    }
  });
});
