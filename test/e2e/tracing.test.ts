/**
 * OpenTelemetry traces, end to end: a real `tether serve` with the standard
 * OTEL_EXPORTER_OTLP_ENDPOINT pointing at a local OTLP/HTTP JSON receiver runs one turn with a
 * tool call (the demo's `todo:` cue), and the receiver gets its spans: the turn (trace id = the
 * frames' trace_id), both model calls with the GenAI attributes, the tool call, slow store commits
 * (threshold 0 here) linked to the turn. Also: approvals waited on (`recordApprovalWait`), and
 * nothing at all is exported or loaded when traces are off.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordApprovalWait, startTurnSpan } from "../../src/agent/turn-tracing.js";
import { enableTracing, NOOP_SPAN, tracing, turnSpanId } from "../../src/lib/tracing.js";
import { OtlpReceiver, type ReceivedSpan } from "../support/otlp-receiver.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { spawnGateway } from "../support/spawn-gateway.js";

let receiver: OtlpReceiver;

beforeAll(async () => {
  receiver = await OtlpReceiver.start();
});
afterAll(async () => {
  await receiver.close();
});

const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);

describe("traces of a turn (tether serve → OTLP/HTTP JSON)", () => {
  it("exports the turn, each model call, the tool call and slow commits, in the frames' trace", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tether-trace-"));
    const config = join(dir, "config.yaml");
    // Every commit counts as slow here, so the commit spans show up in a short test.
    writeFileSync(config, "tracing:\n  commit_threshold_ms: 0\n");
    const gw = await spawnGateway(["--port", "0", "--db", join(dir, "tether.db")], {
      TETHER_CONFIG: config,
      TETHER_DEMO_DELAY_MS: "1",
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: "50",
      OTEL_SERVICE_NAME: "tether-under-test",
    });
    const sock = await RpcSocket.open(gw.wsUrl);
    const snap = await sock.call("session.create", { title: "traced" });
    const sub = await sock.call("prompt.submit", { session_id: snap.session_id, text: "todo: write; test; ship" });
    await sock.waitForEvent(snap.session_id, (f) => f.type === "turn.complete" && f.payload.turn_id === sub.turn_id);
    const frames = sock.sessionEvents(snap.session_id).filter((f) => f.turn_id === sub.turn_id);
    expect(new Set(frames.map((f) => f.trace_id))).toEqual(new Set([sub.trace_id]));
    sock.close();
    // A graceful stop flushes what the batch processor still holds.
    expect(await gw.kill("SIGTERM")).toBe(0);
    await receiver.waitFor((spans) => byName(spans, "tether.turn").some((s) => s.traceId === sub.trace_id));

    const mine = receiver.spans.filter((s) => s.traceId === sub.trace_id);
    const [turn] = byName(mine, "tether.turn");
    expect(turn).toBeDefined();
    expect(turn!.parentSpanId).toBe("");
    expect(turn!.spanId).toBe(turnSpanId(sub.turn_id));
    expect(turn!.resource["service.name"]).toBe("tether-under-test");
    expect(turn!.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.conversation.id": snap.session_id,
      "tether.session_id": snap.session_id,
      "tether.turn_id": sub.turn_id,
      "tether.turn.status": "complete",
    });

    // Two model calls: the one asking for the tool, the one answering after its result.
    const calls = byName(mine, "chat demo").sort((a, b) => a.startMs - b.startMs);
    expect(calls).toHaveLength(2);
    for (const c of calls) {
      expect(c.parentSpanId).toBe(turn!.spanId);
      expect(c.kind).toBe(3); // SPAN_KIND_CLIENT
      expect(c.attributes).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.request.model": "demo", "gen_ai.provider.name": "demo" });
      expect(c.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
      expect(c.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0);
    }
    expect(calls[0]!.attributes["gen_ai.response.finish_reasons"]).toEqual(["tool_calls"]);
    expect(calls[1]!.attributes["gen_ai.response.finish_reasons"]).toEqual(["stop"]);
    const usage = frames.find((f) => f.type === "turn.complete")!.payload.usage;
    expect(turn!.attributes["gen_ai.usage.input_tokens"]).toBe(usage.prompt_tokens);
    expect(turn!.attributes["gen_ai.usage.output_tokens"]).toBe(usage.completion_tokens);

    const [tool] = byName(mine, "execute_tool todo");
    expect(tool).toBeDefined();
    expect(tool!.parentSpanId).toBe(turn!.spanId);
    const toolStart = frames.find((f) => f.type === "tool.start")!;
    expect(tool!.attributes).toMatchObject({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "todo", "gen_ai.tool.call.id": toolStart.payload.call_id });
    // In order: the tool runs between the two model calls, all inside the turn.
    expect(tool!.startMs).toBeGreaterThanOrEqual(calls[0]!.endMs);
    expect(calls[1]!.startMs).toBeGreaterThanOrEqual(tool!.endMs);
    expect(turn!.startMs).toBeLessThanOrEqual(calls[0]!.startMs);
    expect(turn!.endMs).toBeGreaterThanOrEqual(calls[1]!.endMs);

    // Store commits are their own spans (a batch serves many turns), linked to the turn.
    const commits = byName(receiver.spans, "tether.store.commit").filter((s) => s.links.some((l) => l.spanId === turn!.spanId));
    expect(commits.length).toBeGreaterThan(0);
    expect(commits[0]!.attributes["db.system.name"]).toBe("sqlite");
    expect(commits[0]!.attributes["tether.commit.events"]).toBeGreaterThan(0);
  });
});

describe("tracing helpers in-process", () => {
  it("records an approval waited on under the turn's span, from its stored ids alone", async () => {
    const stop = await enableTracing({ endpoint: receiver.url, serviceName: "t", serviceVersion: "0", instanceId: "p", commitThresholdMs: 50 });
    const traceId = "0123456789abcdef0123456789abcdef";
    recordApprovalWait({
      traceId,
      turnId: "turn_approval",
      sessionId: "ses_a",
      requestId: "req_1",
      kind: "approval",
      tool: "fs__write_file",
      callId: "call_1",
      openedAt: 1_700_000_000_000,
      resolvedAt: 1_700_000_004_500,
      choice: "once",
      by: "alice",
    });
    await stop();
    expect(tracing().enabled).toBe(false);
    const [span] = receiver.spans.filter((s) => s.name === "tether.approval" && s.traceId === traceId);
    expect(span).toBeDefined();
    expect(span!.parentSpanId).toBe(turnSpanId("turn_approval"));
    expect(span!.endMs - span!.startMs).toBe(4500);
    expect(span!.attributes).toMatchObject({ "tether.request.id": "req_1", "tether.request.choice": "once", "gen_ai.tool.name": "fs__write_file", "tether.request.wait_ms": 4500 });
  });

  it("is a no-op when off: the shared no-op span, nothing sent", async () => {
    const before = receiver.requests;
    expect(tracing().enabled).toBe(false);
    const span = startTurnSpan({ traceId: "f".repeat(32), turnId: "t", sessionId: "s", model: "demo", provider: { name: "demo", kind: "demo" } } as never);
    expect(span).toBe(NOOP_SPAN);
    recordApprovalWait({ traceId: "f".repeat(32), turnId: "t", sessionId: "s", requestId: "r", kind: "approval", openedAt: 0, resolvedAt: 1 });
    await new Promise((r) => setTimeout(r, 100));
    expect(receiver.requests).toBe(before);
  });
});
