/**
 * What an on-call engineer reads on `/metrics` and in the logs, against a real gateway driven by
 * real clients: turns by outcome and profile with their time to first token and duration, tool
 * calls by tool and outcome, errors by layer and code, store commit latency, the WAL's size,
 * WebSocket and SSE connections opened / closed / open, reconnects, the process defaults; a failed
 * turn logged at warn, one access-log line per HTTP request. The bus lag gauge: test/unit/bus.test.ts.
 */
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { eventually, openSse } from "../support/sse-client.js";
import { capturingLogger } from "../support/manager-harness.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function scrape(): Promise<string> {
  const r = await fetch(`${server!.url}/metrics`);
  expect(r.status).toBe(200);
  return r.text();
}

/** The value of one sample line (`name{labels} value`), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function turn(sock: RpcSocket, sessionId: string, text: string): Promise<void> {
  const sub = await sock.call("prompt.submit", { session_id: sessionId, text });
  await sock.waitForEvent(sessionId, (f) => f.type === "turn.complete" && f.payload.turn_id === sub.turn_id);
}

describe("metrics", () => {
  it("turns by profile and outcome, time to first token and duration, tool calls, errors by layer and code, commits, WAL", async () => {
    server = await startTestServer({ demoDelayMs: 1 });
    const sock = await RpcSocket.open(server.wsUrl);
    const sid = (await sock.call("session.create", {})).session_id;
    await turn(sock, sid, "count to 5");
    await turn(sock, sid, "fail: provider/rate_limited");
    await turn(sock, sid, 'call: todo {"items":[{"content":"a"}]}');
    await turn(sock, sid, "call: todo {}"); // no items: the tool refuses the call
    const text = await scrape();
    expect(sample(text, 'tether_turns_total{profile="default",outcome="complete"}')).toBe(3);
    expect(sample(text, 'tether_turns_total{profile="default",outcome="error"}')).toBe(1);
    // Every turn that streamed a token has its time to first token; every turn its duration.
    expect(sample(text, 'tether_turn_ttft_seconds_count{profile="default"}')).toBeGreaterThanOrEqual(3);
    expect(sample(text, 'tether_turn_duration_seconds_count{profile="default"}')).toBe(4);
    expect(sample(text, 'tether_turn_duration_seconds_bucket{le="+Inf",profile="default"}')).toBe(4);
    expect(sample(text, 'tether_errors_total{layer="provider",code="rate_limited"}')).toBe(1);
    expect(sample(text, 'tether_tool_calls_total{tool="todo",outcome="ok"}')).toBe(1);
    expect(sample(text, 'tether_tool_calls_total{tool="todo",outcome="error"}')).toBe(1);
    expect(text).toMatch(/^tether_errors_total\{layer="tool",code="[a-z_]+"\} 1$/m);
    expect(sample(text, "tether_store_commit_duration_seconds_count")).toBeGreaterThan(4);
    expect(sample(text, 'tether_sqlite_wal_bytes{profile="default"}')).toBeGreaterThan(0);
    // Deltas are counted on their own fast path, and still show under their type.
    expect(sample(text, 'tether_frames_delivered_total{type="message.delta"}')).toBeGreaterThanOrEqual(5);
    // Counters keep their totals across scrapes (pending counts are folded in, not replaced).
    const again = await scrape();
    expect(sample(again, 'tether_turns_total{profile="default",outcome="complete"}')).toBe(3);
    sock.close();
  });

  it("WebSocket and SSE connections opened, closed and open, reconnects of both, and the process defaults", async () => {
    server = await startTestServer({ demoDelayMs: 1 });
    const a = await RpcSocket.open(server.wsUrl);
    const sid = (await a.call("session.create", {})).session_id;
    await turn(a, sid, "count to 3");
    a.close();
    const b = await RpcSocket.open(server.wsUrl);
    // A client coming back: it resumes from the last seq it saw.
    await b.call("session.resume", { session_id: sid, after_seq: 1 });
    const sse = await openSse(`${server.url}/api/sessions/${sid}/events`, { headers: { "last-event-id": "1" } });
    await sse.waitFor((evs) => evs.length > 0);
    let text = await scrape();
    expect(sample(text, 'tether_connections_opened_total{transport="ws"}')).toBe(2);
    expect(sample(text, 'tether_connections_opened_total{transport="sse"}')).toBe(1);
    expect(sample(text, 'tether_connections{transport="ws"}')).toBe(1);
    expect(sample(text, 'tether_connections{transport="sse"}')).toBe(1);
    expect(sample(text, 'tether_reconnects_total{transport="ws"}')).toBe(1);
    expect(sample(text, 'tether_reconnects_total{transport="sse"}')).toBe(1);
    sse.close();
    b.close();
    text = await eventually(async () => {
      const t = await scrape();
      return sample(t, 'tether_connections_closed_total{transport="ws"}') === 2 && sample(t, 'tether_connections_closed_total{transport="sse"}') === 1 ? t : undefined;
    });
    expect(sample(text, 'tether_connections{transport="ws"}')).toBe(0);
    expect(sample(text, 'tether_connections{transport="sse"}')).toBe(0);
    // collectDefaultMetrics: process_* and nodejs_*.
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^process_resident_memory_bytes \d/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
  });

  it("a failed turn logs at warn with its error; every HTTP request is one access-log line with its trace_id, never the query string", async () => {
    const { logger, lines } = capturingLogger();
    server = await startTestServer({ demoDelayMs: 1, logger });
    const sock = await RpcSocket.open(server.wsUrl);
    const sid = (await sock.call("session.create", {})).session_id;
    await turn(sock, sid, "fail: provider/unavailable");
    const failed = await eventually(async () => lines.find((l) => l.msg === "turn finished" && l.status === "error"));
    expect(failed.level).toBe(40);
    expect(failed).toMatchObject({ session_id: sid, error: { layer: "provider", code: "unavailable" } });
    expect(typeof failed.trace_id).toBe("string");
    await turn(sock, sid, "count to 2");
    expect(lines.find((l) => l.msg === "turn finished" && l.status === "complete")?.level).toBe(30);

    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const r = await fetch(`${server.url}/v1/models?token=secret-in-query`, { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
    expect(r.status).toBe(200);
    await fetch(`${server.url}/v1/nowhere`);
    const models = await eventually(async () => lines.find((l) => l.msg === "http request" && l.path === "/v1/models"));
    expect(models).toMatchObject({ level: 30, method: "GET", route: "/v1/models", status: 200, trace_id: traceId });
    expect(typeof models.duration_ms).toBe("number");
    expect(JSON.stringify(lines)).not.toContain("secret-in-query");
    const missing = await eventually(async () => lines.find((l) => l.msg === "http request" && l.path === "/v1/nowhere"));
    expect(missing).toMatchObject({ status: 404 });
    // A stream is one line, written when it ends, with its whole duration.
    const sse = await openSse(`${server.url}/api/sessions/${sid}/events`);
    await sse.waitFor((evs) => evs.length > 0);
    expect(lines.some((l) => l.msg === "http request" && l.path === `/api/sessions/${sid}/events`)).toBe(false);
    sse.close();
    const streamed = await eventually(async () => lines.find((l) => l.msg === "http request" && l.path === `/api/sessions/${sid}/events`));
    expect(streamed).toMatchObject({ status: 200, route: "/api/sessions/:id/events" });
    sock.close();
  });

  it("the Grafana dashboard (deploy/grafana-dashboard.json) queries only families this gateway exposes", async () => {
    const dashboard = JSON.parse(readFileSync(new URL("../../deploy/grafana-dashboard.json", import.meta.url), "utf8"));
    const exprs: string[] = dashboard.panels.flatMap((p: { targets?: Array<{ expr: string }> }) => (p.targets ?? []).map((t) => t.expr));
    expect(exprs.length).toBeGreaterThan(20);
    const families = new Set(exprs.flatMap((e) => [...e.matchAll(/\b((?:tether|process|nodejs)_[a-z0-9_]+)/g)].map((m) => m[1]!.replace(/_(bucket|count|sum)$/, ""))));
    server = await startTestServer({ demoDelayMs: 1 });
    const text = await scrape();
    const exposed = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
    expect([...families].filter((f) => !exposed.has(f))).toEqual([]);
    for (const wanted of ["tether_turns_total", "tether_turn_ttft_seconds", "tether_errors_total", "tether_store_commit_duration_seconds", "tether_sqlite_wal_bytes", "tether_reconnects_total"]) {
      expect(families.has(wanted)).toBe(true);
    }
  });
});
