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
 * prom-client (and the OpenTelemetry API it loads) is required on first use — the first request,
 * frame or scrape — not at start: a gateway listens sooner and an untouched one stays smaller.
 */
let promClient: typeof PromClient | undefined;
function loadPromClient(): typeof PromClient {
  promClient ??= createRequire(import.meta.url)("prom-client") as typeof PromClient;
  return promClient;
}

/** The prom-client objects of one gateway, built together on first use. */
class Instruments {
  readonly registry: PromClient.Registry;
  readonly ended: PromClient.Counter<"reason">;
  readonly opened: PromClient.Counter<"transport">;
  readonly open: PromClient.Gauge<"transport">;
  readonly requestSeconds: PromClient.Histogram<"method" | "route" | "status">;

  constructor(src: () => MetricSources | null, framesPending: Map<string, number>) {
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
    this.open = new Gauge({
      name: "tether_connections",
      help: "Open client connections by transport (ws, sse)",
      labelNames: ["transport"],
      registers,
      collect: () => {
        this.open.set({ transport: "ws" }, src()?.wsConnections() ?? 0);
      },
    });
    this.opened = new Counter({
      name: "tether_connections_opened_total",
      help: "Client connections opened, by transport",
      labelNames: ["transport"],
      registers,
    });
    new Counter({
      name: "tether_frames_delivered_total",
      help: "Session frames delivered to viewers, by event type (once per frame, not per viewer)",
      labelNames: ["type"],
      registers,
      // Counted in a plain map on the hot path (once per frame) and folded in at scrape time.
      collect() {
        for (const [type, n] of framesPending) if (n > 0) this.inc({ type }, n);
        framesPending.clear();
      },
    });
    this.ended = new Counter({
      name: "tether_sessions_ended_total",
      help: "Live sessions ended in this process, by end_reason (reaps included)",
      labelNames: ["reason"],
      registers,
    });
    this.requestSeconds = new Histogram({
      name: "tether_http_request_duration_seconds",
      help: "HTTP request latency until the response headers, by method, route and status",
      labelNames: ["method", "route", "status"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.open.set({ transport: "sse" }, 0);
  }
}

export class PromMetrics implements Metrics {
  private sources: MetricSources | null = null;
  /** Frames delivered since the last scrape, by type (see frameDelivered). */
  private readonly framesPending = new Map<string, number>();
  private instruments: Instruments | undefined;

  private get m(): Instruments {
    this.instruments ??= new Instruments(() => this.sources, this.framesPending);
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
    this.framesPending.set(type, (this.framesPending.get(type) ?? 0) + 1);
  }

  sessionEnded(reason: string): void {
    this.m.ended.inc({ reason });
  }

  connectionOpened(transport: "ws" | "sse" | "http"): void {
    this.m.opened.inc({ transport });
    if (transport !== "ws") this.m.open.inc({ transport });
  }

  connectionClosed(transport: "ws" | "sse" | "http"): void {
    if (transport !== "ws") this.m.open.dec({ transport });
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
