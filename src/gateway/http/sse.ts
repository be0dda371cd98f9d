/**
 * Server-sent events, written straight to the node response, with what every Tether stream needs:
 * a keep-alive comment every `keepAliveMs` (15 s by default; proxies close idle connections), an AbortSignal
 * that fires when the client goes away, and a count of open SSE connections for /metrics.
 * The interval runs on the gateway's Clock, so tests can drive it with a short interval.
 * For flow control (sse-flow.ts) it also exposes how many written bytes the client has not taken
 * yet, the response's `drain`, and a way to cut a connection whose end cannot get through.
 */
import type { ServerResponse } from "node:http";
import type { Clock, TimerHandle } from "../../lib/clock.js";
import type { Metrics } from "../../lib/metrics.js";
import type { AppContext } from "./context.js";

/** The node adapter's mark for a response the handler wrote itself (@hono/node-server). */
const ALREADY_SENT = "x-hono-already-sent";

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
  /**
   * Ends the response now; the body may go on with its own clean-up (a chat completion detaches
   * from its session), which is then not on the client's way to the end of the stream.
   */
  end(): void;
}

export interface SseOptions {
  clock: Clock;
  keepAliveMs: number;
  metrics?: Metrics | null;
  /** Called once when the client went away before `body` finished. */
  onDisconnect?: () => void;
}

export function sseResponse(c: AppContext, opts: SseOptions, body: (sse: SseWriter) => Promise<void>): Response {
  const outgoing = c.env.outgoing;
  // The context's headers so far (CORS, X-Session-Id…) go out with the stream's own.
  const head: Record<string, string> = {};
  c.res.headers.forEach((value, name) => (head[name] = value));
  outgoing.writeHead(200, { ...head, "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  void run(outgoing, opts, body);
  // Written above and by `run`: the node adapter leaves a response marked so alone.
  return c.body(null, 200, { [ALREADY_SENT]: "1" });
}

/**
 * Events are written straight to the node response, not through hono's streamSSE: its web
 * TransformStream and the adapter's reader loop cost ~0.4 ms per response before its first event
 * (and a few promise hops per event) on the way to the first token. `send` resolves once node took
 * the event, or after `drain` when its buffer is full: the loop still waits for a slow client.
 */
async function run(outgoing: ServerResponse, opts: SseOptions, body: (sse: SseWriter) => Promise<void>): Promise<void> {
  const abort = new AbortController();
  let done = false;
  const gone = () => {
    if (done || abort.signal.aborted) return;
    abort.abort(new Error("client disconnected"));
    opts.onDisconnect?.();
  };
  outgoing.once("close", gone);
  opts.metrics?.connectionOpened("sse");
  const burst = new BurstWriter(outgoing);
  const write = (text: string): Promise<void> => {
    if (abort.signal.aborted || outgoing.destroyed || outgoing.writableEnded) return Promise.resolve();
    if (burst.write(text)) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const on = () => {
        outgoing.off("drain", on);
        outgoing.off("close", on);
        resolve();
      };
      outgoing.on("drain", on);
      outgoing.on("close", on);
    });
  };
  let timer: TimerHandle | null = null;
  const arm = () => {
    timer = opts.clock.setTimeout(() => {
      if (abort.signal.aborted || done) return;
      write(": keep-alive\n\n").then(arm, gone);
    }, opts.keepAliveMs);
  };
  arm();
  const drainListeners: Array<() => void> = [];
  let cut: TimerHandle | null = null;
  const writer: SseWriter = {
    signal: abort.signal,
    pendingBytes: () => outgoing.writableLength + burst.held,
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
    end() {
      if (done) return;
      done = true;
      (timer as TimerHandle | null)?.cancel();
      burst.flush();
      if (!outgoing.writableEnded) outgoing.end();
    },
    send(data, fields = {}) {
      if (abort.signal.aborted) return Promise.resolve();
      try {
        return write(sseEvent(data, fields));
      } catch (err) {
        return Promise.reject(err);
      }
    },
  };
  try {
    await body(writer);
  } catch (err) {
    // As hono's streamSSE did: the stream ends; the route's own handlers answer what they expect.
    console.error(err);
  } finally {
    done = true;
    (timer as TimerHandle | null)?.cancel();
    outgoing.off("close", gone);
    for (const fn of drainListeners) outgoing.off("drain", fn);
    opts.metrics?.connectionClosed("sse");
    burst.flush();
    if (!outgoing.writableEnded) outgoing.end();
  }
}

/**
 * A burst of events leaves in one write: the first event of a run of the event loop goes out at
 * once (the first token is never held), and the events that follow before the run ends are joined
 * into one string, written at its end — one `write` (one HTTP chunk, one syscall) instead of one
 * per event, each with its chunk framing (node's cork still framed every write on its own: a
 * 200-delta burst left as ~800 buffers). A 200-delta burst is delivered in one loop callback after
 * its one group commit, and the route's loop takes each frame through a few promise hops; the run
 * ends at the next `process.nextTick` after the microtasks drain, i.e. once the loop waits for
 * frames again. Past 64 KiB held, it writes at once (a burst never piles up in memory).
 */
class BurstWriter {
  private text = "";
  private inRun = false;
  constructor(private readonly outgoing: ServerResponse) {}

  /** Characters held for the end of the run (not yet given to node). */
  get held(): number {
    return this.text.length;
  }

  /** False while node's buffer is over its high-water mark: the caller waits for `drain`. */
  write(text: string): boolean {
    if (!this.inRun) {
      this.inRun = true;
      process.nextTick(this.endOfRun);
      return this.outgoing.write(text);
    }
    this.text += text;
    if (this.text.length > HOLD_FLUSH_CHARS) return this.flush();
    return !this.outgoing.writableNeedDrain;
  }

  /** Writes what is held now (before the response ends, or past the limit). */
  flush(): boolean {
    const text = this.text;
    if (text === "") return !this.outgoing.writableNeedDrain;
    this.text = "";
    if (this.outgoing.destroyed || this.outgoing.writableEnded) return true;
    return this.outgoing.write(text);
  }

  private readonly endOfRun = (): void => {
    this.inRun = false;
    this.flush();
  };
}

const HOLD_FLUSH_CHARS = 64 * 1024;

/** One event as hono's writeSSE wrote it: `event:`, one `data:` line per line, `id:`. */
function sseEvent(data: string, fields: { event?: string; id?: string }): string {
  for (const value of [fields.event, fields.id]) {
    if (value !== undefined && /[\r\n]/.test(value)) throw new Error("an SSE event or id must not contain a line break");
  }
  let out = fields.event ? `event: ${fields.event}\n` : "";
  out += /[\r\n]/.test(data) ? data.split(/\r\n|\r|\n/).map((line) => `data: ${line}`).join("\n") : `data: ${data}`;
  if (fields.id !== undefined) out += `\nid: ${fields.id}`;
  return `${out}\n\n`;
}
