/**
 * A local OTLP/HTTP receiver (JSON encoding, what @opentelemetry/exporter-trace-otlp-http sends):
 * a real HTTP server on 127.0.0.1 that accepts `POST /v1/traces` and keeps every span it got,
 * flattened with its resource and attributes decoded, for tests to assert on.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: AnyValue[] } };
interface KeyValue {
  key: string;
  value: AnyValue;
}

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  /** The span's W3C tracestate ("" when none). */
  traceState: string;
  name: string;
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
  status: { code?: number; message?: string };
  links: Array<{ traceId: string; spanId: string }>;
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
}

function decode(v: AnyValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(decode);
  return undefined;
}

function attrs(list: KeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, decode(kv.value)]));
}

/**
 * How the receiver answers an export: `ok` (200, spans kept), `fail` (400: a refusal the exporter
 * does not retry), `hang` (reads the request and never answers: a collector stuck behind a proxy).
 */
export type ReceiverMode = "ok" | "fail" | "hang";

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Requests to /v1/traces (a no-op tracer must cause none). */
  requests = 0;
  /** Exports refused (`fail`) or left unanswered (`hang`). */
  refused = 0;
  mode: ReceiverMode = "ok";
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<OtlpReceiver> {
    const holder: { r?: OtlpReceiver } = {};
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        if (req.method !== "POST" || req.url !== "/v1/traces") {
          res.writeHead(404).end();
          return;
        }
        let body = Buffer.concat(chunks);
        if (req.headers["content-encoding"] === "gzip") body = gunzipSync(body);
        holder.r!.requests++;
        if (holder.r!.mode !== "ok") {
          holder.r!.refused++;
          if (holder.r!.mode === "fail") res.writeHead(400, { "content-type": "application/json" }).end('{"error":"refused by the test"}');
          return;
        }
        holder.r!.accept(JSON.parse(body.toString("utf8")));
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const r = new OtlpReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    holder.r = r;
    return r;
  }

  private accept(body: any): void {
    for (const rs of body.resourceSpans ?? []) {
      const resource = attrs(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          this.spans.push({
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ?? "",
            traceState: s.traceState ?? "",
            name: s.name,
            kind: s.kind,
            startMs: Number(BigInt(s.startTimeUnixNano) / 1_000_000n),
            endMs: Number(BigInt(s.endTimeUnixNano) / 1_000_000n),
            attributes: attrs(s.attributes),
            resource,
            status: s.status ?? {},
            links: (s.links ?? []).map((l: any) => ({ traceId: l.traceId, spanId: l.spanId })),
            events: (s.events ?? []).map((e: any) => ({ name: e.name, attributes: attrs(e.attributes) })),
          });
        }
      }
    }
  }

  async waitFor(pred: (spans: ReceivedSpan[]) => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pred(this.spans)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for spans; got: ${this.spans.map((s) => s.name).join(", ")}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  close(): Promise<void> {
    // A hanging export keeps its socket open: cut it, or close() would wait for it.
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
