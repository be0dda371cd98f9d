/**
 * The OpenTelemetry side of `tracing.ts`, loaded only when traces are on: the official Node SDK
 * (`NodeTracerProvider`, `BatchSpanProcessor`) and the OTLP/HTTP (JSON) exporter. The exporter reads
 * the standard `OTEL_EXPORTER_OTLP_*` variables (endpoint, headers, timeout); the batch processor
 * `OTEL_BSP_*`; `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES` name the service.
 */
import { createTraceState, ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Attributes as OtelAttributes, type Context, type Span, type Tracer } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider, RandomIdGenerator, type IdGenerator } from "@opentelemetry/sdk-trace-node";
import { WatchedExporter } from "./trace-export-watch.js";
import { turnSpanId, type Attributes, type RecordedSpan, type SpanContextRef, type SpanHandle, type SpanKind as Kind, type Tracing, type TracingOptions, type TurnSpanInfo } from "./tracing.js";

/**
 * Random ids, except for the span being started by `startTurn`: its trace id is the frame's and its
 * span id derives from the turn id. The SDK asks for both synchronously inside `startSpan`, so a
 * slot set just before that call is read by exactly that span.
 */
class TurnIds implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  next: { traceId: string; spanId: string } | undefined;

  generateTraceId(): string {
    const forced = this.next?.traceId;
    if (forced) {
      this.next!.traceId = "";
      return forced;
    }
    return this.random.generateTraceId();
  }

  generateSpanId(): string {
    const forced = this.next?.spanId;
    if (forced) {
      this.next!.spanId = "";
      return forced;
    }
    return this.random.generateSpanId();
  }
}

function clean(attributes: Attributes | undefined): OtelAttributes {
  const out: OtelAttributes = {};
  if (attributes) for (const [k, v] of Object.entries(attributes)) if (v !== undefined) out[k] = v;
  return out;
}

const KINDS: Record<Kind, SpanKind> = { internal: SpanKind.INTERNAL, client: SpanKind.CLIENT };

/** The caller's span (its W3C traceparent and tracestate) as the parent context of a turn span. */
function callerContext(traceId: string, parent: NonNullable<TurnSpanInfo["parent"]>): Context {
  return trace.setSpan(
    ROOT_CONTEXT,
    trace.wrapSpanContext({
      traceId,
      spanId: parent.spanId,
      traceFlags: parent.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
      isRemote: true,
      ...(parent.tracestate ? { traceState: createTraceState(parent.tracestate) } : {}),
    }),
  );
}

function remote(ref: SpanContextRef): Span {
  return trace.wrapSpanContext({ traceId: ref.traceId, spanId: ref.spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true });
}

class OtelSpan implements SpanHandle {
  constructor(readonly span: Span) {}

  get traceId(): string {
    return this.span.spanContext().traceId;
  }

  get spanId(): string {
    return this.span.spanContext().spanId;
  }

  setAttributes(attributes: Attributes): void {
    this.span.setAttributes(clean(attributes));
  }

  end(error?: { type: string; message?: string }): void {
    if (error) markError(this.span, error);
    this.span.end();
  }
}

function markError(span: Span, error: { type: string; message?: string }): void {
  span.setStatus({ code: SpanStatusCode.ERROR, ...(error.message ? { message: error.message } : {}) });
  span.setAttribute("error.type", error.type);
  span.recordException({ name: error.type, message: error.message ?? error.type });
}

class OtelTracing implements Tracing {
  readonly enabled = true;

  constructor(
    private readonly tracer: Tracer,
    private readonly ids: TurnIds,
    readonly commitThresholdMs: number,
  ) {}

  startTurn(info: TurnSpanInfo): SpanHandle {
    this.ids.next = { traceId: info.traceId, spanId: turnSpanId(info.turnId) };
    try {
      // Under the caller's span when it sent one (the sampler follows its decision); else a root.
      const parent = info.parent ? callerContext(info.traceId, info.parent) : undefined;
      const span = this.tracer.startSpan("tether.turn", { kind: SpanKind.INTERNAL, attributes: clean(info.attributes), root: !parent }, parent ?? ROOT_CONTEXT);
      return new OtelSpan(span);
    } finally {
      this.ids.next = undefined;
    }
  }

  startChild(parent: SpanHandle | SpanContextRef, name: string, attributes?: Attributes, kind: Kind = "internal"): SpanHandle {
    const parentSpan = parent instanceof OtelSpan ? parent.span : remote(parent);
    const span = this.tracer.startSpan(name, { kind: KINDS[kind], attributes: clean(attributes) }, trace.setSpan(ROOT_CONTEXT, parentSpan));
    return new OtelSpan(span);
  }

  record(spec: RecordedSpan): void {
    const ctx = spec.parent ? trace.setSpan(ROOT_CONTEXT, remote(spec.parent)) : ROOT_CONTEXT;
    const span = this.tracer.startSpan(
      spec.name,
      {
        kind: KINDS[spec.kind ?? "internal"],
        startTime: spec.startMs,
        attributes: clean(spec.attributes),
        links: (spec.links ?? []).map((l) => ({ context: { traceId: l.traceId, spanId: l.spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true } })),
        root: !spec.parent,
      },
      ctx,
    );
    if (spec.error) markError(span, spec.error);
    span.end(spec.endMs);
  }
}

/** Where the exporter sends when the environment says (the SDK's own reading of it), for logs. */
function envEndpoint(): string {
  const traces = process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (traces) return traces;
  const base = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  return base ? `${base.replace(/\/+$/, "")}/v1/traces` : "http://localhost:4318/v1/traces";
}

export async function startOtelTracing(options: TracingOptions): Promise<{ tracing: Tracing; shutdown: () => Promise<void> }> {
  const url = options.endpoint ? `${options.endpoint.replace(/\/+$/, "")}/v1/traces` : undefined;
  // Failures counted and said once per change of state (the SDK drops a failed batch silently).
  const exporter = new WatchedExporter(new OTLPTraceExporter(url ? { url } : {}), {
    endpoint: url ?? envEndpoint(),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.onExportFailed ? { onFailed: options.onExportFailed } : {}),
  });
  const ids = new TurnIds();
  // The environment (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) wins over our defaults.
  const resource = resourceFromAttributes({
    "service.name": options.serviceName,
    "service.version": options.serviceVersion,
    "service.instance.id": options.instanceId,
  }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({ resource, idGenerator: ids, spanProcessors: [new BatchSpanProcessor(exporter)] });
  const tracer = provider.getTracer("tether", options.serviceVersion);
  return {
    tracing: new OtelTracing(tracer, ids, options.commitThresholdMs),
    shutdown: () => provider.shutdown(),
  };
}
