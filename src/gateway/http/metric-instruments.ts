/**
 * The prom-client objects of one gateway (its own registry: tests run several in one process),
 * built together on first use. Names and units follow Prometheus conventions: `_total` counters,
 * `_seconds` and `_bytes` units, a few bounded labels each. What changes per delta or per commit is
 * kept in plain tallies (metric-tallies.ts) and folded in at scrape time; gauges of current state
 * are read from their sources then.
 */
import type * as PromClient from "prom-client";
import { foldLabelled, foldPairs, type MetricSources, type Tallies } from "./metric-tallies.js";

export class Instruments {
  readonly registry: PromClient.Registry;
  readonly requestSeconds: PromClient.Histogram<"method" | "route" | "status">;
  readonly ttftSeconds: PromClient.Histogram<"profile">;
  readonly turnSeconds: PromClient.Histogram<"profile">;
  readonly commitSeconds: PromClient.Histogram<string>;

  constructor(prom: typeof PromClient, src: () => MetricSources | null, tallies: Tallies) {
    this.registry = new prom.Registry();
    // process_* (CPU, memory, open fds, start time) and nodejs_* (event loop lag, heap, GC).
    prom.collectDefaultMetrics({ register: this.registry });
    stateGauges(prom, this.registry, src, tallies);
    eventCounters(prom, this.registry, tallies);
    const registers = [this.registry];
    this.requestSeconds = new prom.Histogram({
      name: "tether_http_request_duration_seconds",
      help: "HTTP request latency until the response headers, by method, route and status (health probes excluded)",
      labelNames: ["method", "route", "status"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.ttftSeconds = new prom.Histogram({
      name: "tether_turn_ttft_seconds",
      help: "Time from a turn's start to its first streamed token, by profile",
      labelNames: ["profile"],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60],
      registers,
    });
    this.turnSeconds = new prom.Histogram({
      name: "tether_turn_duration_seconds",
      help: "Time from a turn's start to its end (approval waits included), by profile",
      labelNames: ["profile"],
      buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
      registers,
    });
    this.commitSeconds = new prom.Histogram({
      name: "tether_store_commit_duration_seconds",
      help: "Store commit latency (one group commit: every write of a tick in one transaction)",
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    });
  }
}

/** Current state, read from the sources at scrape time. */
function stateGauges(prom: typeof PromClient, registry: PromClient.Registry, src: () => MetricSources | null, tallies: Tallies): void {
  const registers = [registry];
  const gauge = (name: string, help: string, read: (s: MetricSources) => number) =>
    new prom.Gauge({
      name,
      help,
      registers,
      collect() {
        const s = src();
        this.set(s ? read(s) : 0);
      },
    });
  gauge("tether_sessions_live", "Live sessions in this process with at least one viewer", (s) => s.sessions().live);
  gauge("tether_sessions_detached", "Live sessions in this process with no viewer (detached, awaiting resume or reap)", (s) => s.sessions().detached);
  gauge("tether_turns_active", "Turns running in this process", (s) => s.activeTurns());
  gauge("tether_ring_bytes", "Bytes held by the transient replay rings of all live sessions", (s) => s.ringBytes());
  new prom.Gauge({
    name: "tether_connections",
    help: "Open client connections by transport (ws, sse)",
    labelNames: ["transport"],
    registers,
    collect() {
      this.set({ transport: "ws" }, src()?.wsConnections() ?? 0);
      this.set({ transport: "sse" }, tallies.open.get("sse") ?? 0);
      for (const [transport, n] of tallies.open) if (transport !== "sse") this.set({ transport }, n);
    },
  });
  new prom.Gauge({
    name: "tether_sqlite_wal_bytes",
    help: "Size of the SQLite -wal file of each open store (kept under sqlite.wal_max_bytes), by profile",
    labelNames: ["profile"],
    registers,
    collect() {
      for (const [profile, bytes] of src()?.walBytes() ?? []) this.set({ profile }, bytes);
    },
  });
  new prom.Gauge({
    name: "tether_bus_lag_seconds",
    help: "Age of the newest frame this node read from the Redis bus when it read it (another node's frames; 0 without a bus)",
    registers,
    collect() {
      const ms = src()?.busLagMs() ?? null;
      if (ms !== null) this.set(ms / 1000);
    },
  });
}

/** What happened since the last scrape, folded in from the tallies. */
function eventCounters(prom: typeof PromClient, registry: PromClient.Registry, t: Tallies): void {
  const registers = [registry];
  const counter = <L extends string>(name: string, help: string, labelNames: L[], collect: (c: PromClient.Counter<L>) => void) =>
    new prom.Counter<L>({
      name,
      help,
      labelNames,
      registers,
      collect() {
        collect(this);
      },
    });
  counter("tether_connections_opened_total", "Client connections opened, by transport", ["transport"], (c) => foldLabelled(c, "transport", t.opened));
  counter("tether_connections_closed_total", "Client connections closed, by transport", ["transport"], (c) => foldLabelled(c, "transport", t.closed));
  counter("tether_reconnects_total", "Clients that came back and caught up (WebSocket session.resume with after_seq, SSE Last-Event-ID), by transport", ["transport"], (c) =>
    foldLabelled(c, "transport", t.reconnects),
  );
  counter("tether_frames_delivered_total", "Session frames delivered to viewers, by event type (once per frame, not per viewer)", ["type"], (c) => {
    if (t.deltas > 0) c.inc({ type: "message.delta" }, t.deltas);
    t.deltas = 0;
    foldLabelled(c, "type", t.frames);
  });
  counter("tether_sessions_ended_total", "Live sessions ended in this process, by end_reason (reaps included)", ["reason"], (c) => foldLabelled(c, "reason", t.ended));
  counter("tether_session_transitions_refused_total", "Session state transitions the live registry refused (a bug in their caller), by from and to state", ["from", "to"], (c) =>
    foldPairs(c, "from", "to", t.refused),
  );
  counter("tether_turns_total", "Turns ended in this process, by profile and outcome (complete, interrupted, error)", ["profile", "outcome"], (c) =>
    foldPairs(c, "profile", "outcome", t.turns),
  );
  counter("tether_tool_calls_total", "Tool calls ended, by tool and outcome (ok, error)", ["tool", "outcome"], (c) => foldPairs(c, "tool", "outcome", t.tools));
  counter("tether_errors_total", "Turn and tool errors, by layer (provider, tool, storage, gateway, …) and code", ["layer", "code"], (c) =>
    foldPairs(c, "layer", "code", t.errors),
  );
  counter("tether_store_commits_failed_total", "Store commits that failed (each write of the batch is then retried alone)", [], (c) => {
    if (t.commitsFailed > 0) c.inc(t.commitsFailed);
    t.commitsFailed = 0;
  });
  counter("tether_trace_export_failures_total", "OTLP trace exports that failed (collector down, refusing or timing out)", [], (c) => {
    if (t.traceExportsFailed > 0) c.inc(t.traceExportsFailed);
    t.traceExportsFailed = 0;
  });
  counter("tether_trace_spans_dropped_total", "Spans of the failed trace exports, lost", [], (c) => {
    if (t.traceSpansDropped > 0) c.inc(t.traceSpansDropped);
    t.traceSpansDropped = 0;
  });
}
