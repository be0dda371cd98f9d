/**
 * The OTLP exporter, watched: the SDK drops a failed batch silently (its diag logger is off), so a
 * collector that is down, refuses or times out would go unnoticed. Every failed export is counted
 * (`onFailed`, with its spans: `tether_trace_export_failures_total`), and the logs say it once
 * per change of state — the first failure at warn with its error, the first success after
 * failures at info with how many exports failed meanwhile — not once per batch.
 */
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-node";
import type { Logger } from "./logger.js";

/** The SDK's `ExportResult` (`@opentelemetry/core`: code 0 = SUCCESS, 1 = FAILED). */
interface ExportResult {
  code: number;
  error?: Error;
}

export interface ExportWatchOptions {
  logger?: Logger;
  onFailed?: (spans: number) => void;
  /** Where the spans go, for the log line. */
  endpoint: string;
}

export class WatchedExporter implements SpanExporter {
  private failing = false;
  private failedSince = 0;

  constructor(
    private readonly inner: SpanExporter,
    private readonly opts: ExportWatchOptions,
  ) {}

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    this.inner.export(spans, (result: ExportResult) => {
      if (result.code === 0) this.succeeded();
      else this.failed(spans.length, result.error);
      resultCallback(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }

  private failed(spans: number, error: Error | undefined): void {
    this.opts.onFailed?.(spans);
    this.failedSince++;
    if (this.failing) return;
    this.failing = true;
    this.opts.logger?.warn({ endpoint: this.opts.endpoint, spans, error: error?.message ?? "export failed" }, "trace export failing: spans are being dropped");
  }

  private succeeded(): void {
    if (!this.failing) return;
    this.opts.logger?.info({ endpoint: this.opts.endpoint, failed_exports: this.failedSince }, "trace export recovered");
    this.failing = false;
    this.failedSince = 0;
  }
}
