/**
 * Server-sent events on top of hono's streamSSE, with what every Tether stream needs: a keep-alive
 * comment every `keepAliveMs` (15 s by default; proxies close idle connections), an AbortSignal
 * that fires when the client goes away, and a count of open SSE connections for /metrics.
 * The interval runs on the gateway's Clock, so tests can drive it with a short interval.
 */
import { streamSSE, type SSEStreamingApi } from "hono/streaming";
import type { Clock, TimerHandle } from "../../lib/clock.js";
import type { Metrics } from "../../lib/metrics.js";
import type { AppContext } from "./context.js";

export interface SseWriter {
  /** One event: `id:` and `event:` lines when given, then `data:`. */
  send(data: string, fields?: { event?: string; id?: string }): Promise<void>;
  /** Aborts when the client disconnects. */
  readonly signal: AbortSignal;
}

export interface SseOptions {
  clock: Clock;
  keepAliveMs: number;
  metrics?: Metrics | null;
  /** Called once when the client went away before `body` finished. */
  onDisconnect?: () => void;
}

export function sseResponse(c: AppContext, opts: SseOptions, body: (sse: SseWriter) => Promise<void>): Response {
  return streamSSE(c, async (stream: SSEStreamingApi) => {
    const abort = new AbortController();
    let done = false;
    const gone = () => {
      if (done || abort.signal.aborted) return;
      abort.abort(new Error("client disconnected"));
      opts.onDisconnect?.();
    };
    stream.onAbort(gone);
    c.env.outgoing.once("close", gone);
    opts.metrics?.connectionOpened("sse");
    let timer: TimerHandle | null = null;
    const arm = () => {
      timer = opts.clock.setTimeout(() => {
        if (abort.signal.aborted || done) return;
        stream.write(": keep-alive\n\n").then(arm, gone);
      }, opts.keepAliveMs);
    };
    arm();
    const writer: SseWriter = {
      signal: abort.signal,
      async send(data, fields = {}) {
        if (abort.signal.aborted) return;
        const msg: { data: string; event?: string; id?: string } = { data };
        if (fields.event !== undefined) msg.event = fields.event;
        if (fields.id !== undefined) msg.id = fields.id;
        await stream.writeSSE(msg);
      },
    };
    try {
      await body(writer);
    } finally {
      done = true;
      (timer as TimerHandle | null)?.cancel();
      c.env.outgoing.off("close", gone);
      opts.metrics?.connectionClosed("sse");
    }
  });
}
