/**
 * The Prometheus implementation of `Metrics` (prom-client), served at `GET /metrics`: every family
 * is listed in docs/deploy.md (*Metrics*). Each gateway has its own registry (tests run several in
 * one process); `forProfile` hands each profile's sessions the same metrics with its name on turns.
 *
 * prom-client (and the OpenTelemetry API it loads) is required on first use — the first scrape,
 * the first API request, the first commit or finished turn (their histograms) — not at start, and
 * not for a WebSocket connection or a health probe: counters are kept in plain tallies and folded
 * in at scrape time (metric-tallies.ts), gauges read from their sources then.
 */
import { createRequire } from "node:module";
import type * as PromClient from "prom-client";
import type { FrameMetrics, Metrics, Transport } from "../../lib/metrics.js";
import { SessionFrameMetrics, type TurnSink } from "./frame-metrics.js";
import { Instruments } from "./metric-instruments.js";
import { bump, CappedLabel, newTallies, type MetricSources, type Tallies } from "./metric-tallies.js";

export type { MetricSources } from "./metric-tallies.js";

let promClient: typeof PromClient | undefined;
function loadPromClient(): typeof PromClient {
  promClient ??= createRequire(import.meta.url)("prom-client") as typeof PromClient;
  return promClient;
}

export class PromMetrics implements Metrics, TurnSink {
  private sources: MetricSources | null = null;
  readonly tallies: Tallies = newTallies();
  readonly toolNames = new CappedLabel();
  readonly errorKinds = new CappedLabel("other\0other");
  private instruments: Instruments | undefined;
  private readonly profiles = new Map<string, Metrics>();

  private get m(): Instruments {
    this.instruments ??= new Instruments(loadPromClient(), () => this.sources, this.tallies);
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

  sessionFrames(): FrameMetrics {
    return new SessionFrameMetrics(this, "default");
  }

  forProfile(profile: string): Metrics {
    let bound = this.profiles.get(profile);
    if (!bound) {
      bound = profile === "default" ? this : { ...this.delegates(), sessionFrames: () => new SessionFrameMetrics(this, profile), forProfile: (p) => this.forProfile(p) };
      this.profiles.set(profile, bound);
    }
    return bound;
  }

  observeTtft(profile: string, seconds: number): void {
    if (seconds >= 0) this.m.ttftSeconds.observe({ profile }, seconds);
  }

  observeTurn(profile: string, seconds: number): void {
    if (seconds >= 0) this.m.turnSeconds.observe({ profile }, seconds);
  }

  sessionEnded(reason: string): void {
    bump(this.tallies.ended, reason);
  }

  transitionRefused(from: string, to: string): void {
    bump(this.tallies.refused, `${from}\0${to}`);
  }

  connectionOpened(transport: Transport): void {
    bump(this.tallies.opened, transport);
    if (transport !== "ws") bump(this.tallies.open, transport);
  }

  connectionClosed(transport: Transport): void {
    bump(this.tallies.closed, transport);
    if (transport !== "ws") bump(this.tallies.open, transport, -1);
  }

  reconnected(transport: "ws" | "sse"): void {
    bump(this.tallies.reconnects, transport);
  }

  /** A trace export failed, with the spans it carried (tracing-otel's watched exporter). */
  traceExportFailed(spans: number): void {
    this.tallies.traceExportsFailed++;
    this.tallies.traceSpansDropped += spans;
  }

  storeCommitted(seconds: number, failed: boolean): void {
    this.m.commitSeconds.observe(seconds);
    if (failed) this.tallies.commitsFailed++;
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  /** The methods a profile's view shares with this one, bound. */
  private delegates(): Omit<Metrics, "sessionFrames" | "forProfile"> {
    return {
      sessionEnded: (r) => this.sessionEnded(r),
      transitionRefused: (f, t) => this.transitionRefused(f, t),
      connectionOpened: (t) => this.connectionOpened(t),
      connectionClosed: (t) => this.connectionClosed(t),
      reconnected: (t) => this.reconnected(t),
      storeCommitted: (s, f) => this.storeCommitted(s, f),
    };
  }
}
