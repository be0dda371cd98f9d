/**
 * The Prometheus implementation of `Metrics` (prom-client), served at `GET /metrics`. Each gateway
 * has its own registry (tests run several in one process). Gauges that describe current state
 * (live/detached sessions, active turns, ring bytes, WebSocket connections) are read at scrape
 * time from their sources; counters and the latency histogram are updated as things happen.
 */
import { createRequire } from "node:module";
import type * as PromClient from "prom-client";
import type { Metrics } from "../../lib/metrics.js";

export interface MetricSources {
  sessions(): { live: number; detached: number };
  activeTurns(): number;
  ringBytes(): number;
  wsConnections(): number;
}

/**
 * prom-client (and the OpenTelemetry API it loads) is required on first use — the first scrape or
 * the first API request (its latency histogram) — not at start, and not for a WebSocket connection
 * or a health probe: counters are kept in plain maps and folded in at scrape time.
 */
let promClient: typeof PromClient | undefined;
function loadPromClient(): typeof PromClient {
  promClient ??= createRequire(import.meta.url)("prom-client") as typeof PromClient;
  return promClient;
}

/** What happened since the last scrape (counters) and what is open now (gauges): plain maps on the hot path. */
interface Tallies {
  frames: Map<string, number>;
  ended: Map<string, number>;
  opened: Map<string, number>;
  /** Open SSE / HTTP streams by transport (WebSocket connections are read from the endpoint). */
  open: Map<string, number>;
}

/** Adds the pending counts to `counter` and forgets them (called at scrape time). */
function fold(counter: PromClient.Counter<string>, label: string, pending: Map<string, number>): void {
  for (const [value, n] of pending) if (n > 0) counter.inc({ [label]: value }, n);
  pending.clear();
}

function bump(map: Map<string, number>, key: string, by: number): void {
  map.set(key, (map.get(key) ?? 0) + by);
}

/** The prom-client objects of one gateway, built together on first use. */
class Instruments {
  readonly registry: PromClient.Registry;
  readonly requestSeconds: PromClient.Histogram<"method" | "route" | "status">;

  constructor(src: () => MetricSources | null, tallies: Tallies) {
    const { Counter, Gauge, Histogram, Registry } = loadPromClient();
    this.registry = new Registry();
    const registers = [this.registry];
    new Gauge({
      name: "tether_sessions_live",
      help: "Live sessions in this process with at least one viewer",
      registers,
      collect() {
        this.set(src()?.sessions().live ?? 0);
      },
    });
    new Gauge({
      name: "tether_sessions_detached",
      help: "Live sessions in this process with no viewer (detached, awaiting resume or reap)",
      registers,
      collect() {
        this.set(src()?.sessions().detached ?? 0);
      },
    });
    new Gauge({
      name: "tether_turns_active",
      help: "Turns running in this process",
      registers,
      collect() {
        this.set(src()?.activeTurns() ?? 0);
      },
    });
    new Gauge({
      name: "tether_ring_bytes",
      help: "Bytes held by the transient replay rings of all live sessions",
      registers,
      collect() {
        this.set(src()?.ringBytes() ?? 0);
      },
    });
    new Gauge({
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
    new Counter({
      name: "tether_connections_opened_total",
      help: "Client connections opened, by transport",
      labelNames: ["transport"],
      registers,
      collect() {
        fold(this, "transport", tallies.opened);
      },
    });
    new Counter({
      name: "tether_frames_delivered_total",
      help: "Session frames delivered to viewers, by event type (once per frame, not per viewer)",
      labelNames: ["type"],
      registers,
      collect() {
        fold(this, "type", tallies.frames);
      },
    });
    new Counter({
      name: "tether_sessions_ended_total",
      help: "Live sessions ended in this process, by end_reason (reaps included)",
      labelNames: ["reason"],
      registers,
      collect() {
        fold(this, "reason", tallies.ended);
      },
    });
    this.requestSeconds = new Histogram({
      name: "tether_http_request_duration_seconds",
      help: "HTTP request latency until the response headers, by method, route and status (health probes excluded)",
      labelNames: ["method", "route", "status"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
  }
}

export class PromMetrics implements Metrics {
  private sources: MetricSources | null = null;
  private readonly tallies: Tallies = { frames: new Map(), ended: new Map(), opened: new Map(), open: new Map() };
  private instruments: Instruments | undefined;

  private get m(): Instruments {
    this.instruments ??= new Instruments(() => this.sources, this.tallies);
    return this.instruments;
  }

  get registry(): PromClient.Registry {
    return this.m.registry;
  }

  get requestSeconds(): PromClient.Histogram<"method" | "route" | "status"> {
    return this.m.requestSeconds;
  }

  /** Connects the scrape-time sources once the gateway is built. */
  bind(sources: MetricSources): void {
    this.sources = sources;
  }

  frameDelivered(type: string): void {
    // prom-client's labelled inc() hashes the labels and allocates per call: too much per frame.
    bump(this.tallies.frames, type, 1);
  }

  sessionEnded(reason: string): void {
    bump(this.tallies.ended, reason, 1);
  }

  connectionOpened(transport: "ws" | "sse" | "http"): void {
    bump(this.tallies.opened, transport, 1);
    if (transport !== "ws") bump(this.tallies.open, transport, 1);
  }

  connectionClosed(transport: "ws" | "sse" | "http"): void {
    if (transport !== "ws") bump(this.tallies.open, transport, -1);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
