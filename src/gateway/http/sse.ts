/**
 * Server-sent events on top of hono's streamSSE, with what every Tether stream needs: a keep-alive
 * comment every `keepAliveMs` (15 s by default; proxies close idle connections), an AbortSignal
 * that fires when the client goes away, and a count of open SSE connections for /metrics.
 * The interval runs on the gateway's Clock, so tests can drive it with a short interval.
 * For flow control (sse-flow.ts) it also exposes how many written bytes the client has not taken
 * yet, the response's `drain`, and a way to cut a connection whose end cannot get through.
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
  /** Bytes written and not yet taken by the kernel (the node response's buffer and its socket's). */
  pendingBytes(): number;
  /** True while that buffer is over its high-water mark: the client is behind, writes wait for `drain`. */
  blocked(): boolean;
  /** `fn` runs whenever that buffer drained (until the body returns). */
  onDrain(fn: () => void): void;
  /**
   * The body is about to return and end the response; if the end cannot get through within
   * `graceMs` (a client that stopped reading), the connection is cut instead.
   */
  cutAfter(graceMs: number): void;
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
    const outgoing = c.env.outgoing;
    const drainListeners: Array<() => void> = [];
    let cut: TimerHandle | null = null;
    const writer: SseWriter = {
      signal: abort.signal,
      pendingBytes: () => outgoing.writableLength,
      blocked: () => outgoing.writableNeedDrain,
      onDrain(fn) {
        drainListeners.push(fn);
        outgoing.on("drain", fn);
      },
      cutAfter(graceMs) {
        if (cut || outgoing.destroyed || outgoing.writableFinished) return;
        // Armed on the Clock and left running after the body returns: the end is what may be stuck.
        cut = opts.clock.setTimeout(() => outgoing.destroy(), graceMs);
        outgoing.once("close", () => cut?.cancel());
      },
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
      for (const fn of drainListeners) outgoing.off("drain", fn);
      opts.metrics?.connectionClosed("sse");
    }
  });
}
