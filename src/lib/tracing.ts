/**
 * Traces (OpenTelemetry) behind one small seam, off by default and free when off.
 *
 *   const turn = tracing().startTurn({ traceId, turnId, sessionId, … });   // root span of a turn
 *   const call = tracing().startChild(turn, "chat gpt-4o", { … }, "client");
 *   call.setAttributes({ "gen_ai.usage.input_tokens": 12 });
 *   call.end();                    // or call.end(error) — status ERROR, `error.type`, exception event
 *
 * Off (the default: no `OTEL_EXPORTER_OTLP_ENDPOINT`, no config `tracing.endpoint`), `tracing()` is
 * a no-op object whose methods return one shared no-op span: no OpenTelemetry module is even
 * loaded, and a turn pays a handful of empty calls (measured: `npm run bench -- --only=tracing`).
 * On, `enableTracing` loads the official SDK (`@opentelemetry/sdk-trace-node`, the OTLP/HTTP
 * exporter) and every span goes through a BatchSpanProcessor.
 *
 * Trace ids are Tether's own: the turn span's trace id IS the frame's `trace_id` (a client's
 * `trace_id` finds the turn in any tracing backend), and its span id is derived from the turn id,
 * so a span recorded later — an approval answered after a restart, by another process — can name
 * the turn span as its parent without having kept it (`turnSpanContext`).
 */
import { createHash } from "node:crypto";
import type { Logger } from "./logger.js";

export type SpanKind = "internal" | "client";
export type AttributeValue = string | number | boolean | string[];
export type Attributes = Record<string, AttributeValue | undefined>;

/** One span, as Tether uses it. */
export interface SpanHandle {
  setAttributes(attributes: Attributes): void;
  /** Ends the span; with an error, its status is ERROR with `error.type` and an exception event. */
  end(error?: { type: string; message?: string }): void;
  /** The span's ids (all zeros for the no-op span). */
  readonly traceId: string;
  readonly spanId: string;
}

/** A span of an existing trace: the parent of spans recorded for a turn, possibly by another process. */
export interface SpanContextRef {
  traceId: string;
  spanId: string;
}

export interface TurnSpanInfo {
  /** The frames' `trace_id` (32 hex digits): becomes the span's trace id. */
  traceId: string;
  /**
   * The caller's span (W3C `traceparent`, same trace id): the turn span becomes its child and
   * follows its sampling decision; `tracestate` is carried on. Absent: the turn span is a root.
   */
  parent?: { spanId: string; sampled: boolean; tracestate?: string };
  turnId: string;
  sessionId: string;
  attributes?: Attributes;
}

/** A span recorded after the fact, with its own start and end (e.g. an approval waited on). */
export interface RecordedSpan {
  name: string;
  /** The parent: usually `turnSpanContext(traceId, turnId)`. */
  parent?: SpanContextRef;
  /** Other spans it relates to (a store commit links the turns whose frames it wrote). */
  links?: SpanContextRef[];
  startMs: number;
  endMs: number;
  attributes?: Attributes;
  error?: { type: string; message?: string };
  kind?: SpanKind;
}

export interface Tracing {
  /** True when spans are exported; hot paths check it before building attributes. */
  readonly enabled: boolean;
  startTurn(info: TurnSpanInfo): SpanHandle;
  startChild(parent: SpanHandle | SpanContextRef, name: string, attributes?: Attributes, kind?: SpanKind): SpanHandle;
  record(span: RecordedSpan): void;
  /** Store commits slower than this are recorded as spans. */
  readonly commitThresholdMs: number;
}

const ZERO_TRACE = "00000000000000000000000000000000";
const ZERO_SPAN = "0000000000000000";

/** The span every no-op call returns: one shared object, so "is this span real?" is an identity check. */
export const NOOP_SPAN: SpanHandle = Object.freeze({
  setAttributes() {},
  end() {},
  traceId: ZERO_TRACE,
  spanId: ZERO_SPAN,
});

export const NOOP_TRACING: Tracing = Object.freeze({
  enabled: false,
  commitThresholdMs: Infinity,
  startTurn: () => NOOP_SPAN,
  startChild: () => NOOP_SPAN,
  record: () => undefined,
});

let current: Tracing = NOOP_TRACING;

/** The process's tracing: the no-op one unless `enableTracing` ran. */
export function tracing(): Tracing {
  return current;
}

/** Installs a Tracing (enableTracing does; tests may install their own). Returns the previous one. */
export function setTracing(next: Tracing): Tracing {
  const previous = current;
  current = next;
  return previous;
}

/**
 * The span id of a turn's root span: derived from the turn id (never all zeros), so any process can
 * name it as a parent given only what the store keeps (`trace_id`, `turn_id`).
 */
export function turnSpanId(turnId: string): string {
  const hex = createHash("sha256").update(turnId).digest("hex").slice(0, 16);
  return hex === ZERO_SPAN ? "0000000000000001" : hex;
}

export function turnSpanContext(traceId: string, turnId: string): SpanContextRef {
  return { traceId, spanId: turnSpanId(turnId) };
}

export interface TracingOptions {
  /** OTLP/HTTP base endpoint (`…:4318`); `/v1/traces` is appended. Default: the OTEL_EXPORTER_OTLP_* env. */
  endpoint?: string;
  serviceName: string;
  serviceVersion: string;
  /** `service.instance.id`: this process. */
  instanceId: string;
  commitThresholdMs: number;
  /** Where the exporter's failures (and its recovery) are said, once per change of state. */
  logger?: Logger;
  /** Each export that failed, with the spans it carried (`tether_trace_export_failures_total`). */
  onExportFailed?: (spans: number) => void;
}

/**
 * Starts exporting spans (loads the OpenTelemetry SDK) and installs it as `tracing()`. Returns the
 * stop: flushes what is buffered and shuts the exporter down (a graceful stop calls it last), in
 * at most `budgetMs` — a collector that accepts the connection and never answers would otherwise
 * hold the stop for the exporter's own timeout (10 s); what is not out by then is dropped, said
 * once at warn.
 */
export async function enableTracing(options: TracingOptions): Promise<(budgetMs?: number) => Promise<void>> {
  const { startOtelTracing } = await import("./tracing-otel.js");
  const { tracing: live, shutdown } = await startOtelTracing(options);
  const previous = setTracing(live);
  return async (budgetMs = Number.POSITIVE_INFINITY) => {
    if (current === live) setTracing(previous);
    const flushed = await withinMs(shutdown(), budgetMs);
    if (!flushed) options.logger?.warn({ budget_ms: Math.round(budgetMs) }, "traces not flushed: the collector did not answer within the stop's budget");
  };
}

/** True when `work` settled within `ms`; false when the time ran out first (it goes on unawaited). */
async function withinMs(work: Promise<unknown>, ms: number): Promise<boolean> {
  if (!Number.isFinite(ms)) return work.then(() => true);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  work.catch(() => undefined);
  try {
    return await Promise.race([work.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
