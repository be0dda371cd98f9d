/**
 * One streamed chat completion as an async iterator written out by hand (like the demo's
 * `DemoStream`), fed by the response's `data` events.
 *
 * Why not an async generator over `body.iterator()`: per chunk that cost the readable's own async
 * iterator (an async generator with its promises), our generator's resumption and `yield*` hop,
 * and a `clearTimeout` + `setTimeout` of the idle timer — at 1,000 streams whose chunks arrive one
 * at a time, that was a tenth of the gateway's CPU per delta. Here a chunk that a waiting consumer
 * gets costs one promise; the idle timer is set once per `timeoutMs`, not once per chunk.
 *
 * Same behaviour as the generator it replaces: nothing is sent before the first `next()`; chunks
 * parsed before a failure are handed out before it; a caller's abort rejects with its reason
 * untouched, at once; `return()` (a consumer's `break`) drops the socket; an answer read to its
 * end gives the socket back to the pool before the iterator reports done.
 *
 *   const it = new OpenAIChunkStream(req, { name, timeoutMs, clock, open: (signal) => postUpstream(…) });
 */
import { createParser, type EventSourceParser } from "eventsource-parser";
import type { Clock, TimerHandle } from "../lib/clock.js";
import { classifyConnectError, incompleteStreamError, timeoutError } from "./error-classifier.js";
import { OpenAIStreamState } from "./openai-stream.js";
import { ProviderError, type ProviderChunk, type StreamRequest } from "./provider.js";
import type { UpstreamResponse } from "./upstream-http.js";

export interface ChunkStreamOptions {
  name: string;
  /** Idle timeout: the longest the server may stay silent while we wait for it. */
  timeoutMs: number;
  clock: Clock;
  /** Sends the request; resolves with a 2xx response (throws a ProviderError for another status). */
  open: (signal: AbortSignal) => Promise<UpstreamResponse>;
}

type Result = IteratorResult<ProviderChunk, undefined>;

const DONE: Result = { done: true, value: undefined };

/** Chunks parsed but not yet taken past which the response is paused (the socket then fills). */
const QUEUE_HIGH = 1024;

const enum Phase {
  Idle,
  Opening,
  Reading,
  /** The answer ended well: queued chunks, then done once the socket is back in the pool. */
  Ended,
  /** Reported (done, failure or return): every later call is done. */
  Closed,
}

export class OpenAIChunkStream implements AsyncIterableIterator<ProviderChunk, undefined> {
  private phase = Phase.Idle;
  private queue: ProviderChunk[] = [];
  private head = 0;
  /**
   * `data:` payloads read but not parsed yet. A burst's chunks arrive in one `data` event; parsing
   * them all before handing out the first held the first token back by a JSON.parse per chunk
   * of the burst (~0.2 ms for 200). They are parsed as the consumer takes them.
   */
  private raw: string[] = [];
  private rawHead = 0;
  /** `[DONE]` was read (it may still sit behind unparsed payloads). */
  private sawDone = false;
  /** The answer's closing chunks (tool calls, usage, finish) are queued: they follow the last payload. */
  private finalQueued = false;
  private failed = false;
  private failure: unknown;
  private waiter: { resolve: (r: Result) => void; reject: (err: unknown) => void } | null = null;
  private res: UpstreamResponse | undefined;
  private released: Promise<void> | undefined;
  private paused = false;
  /** Our listeners are on the response body. */
  private hooked = false;
  /** One controller for the HTTP exchange: the caller's abort and our idle timeout both end it. */
  private readonly http = new AbortController();
  private readonly watchdog: IdleWatchdog;
  private readonly state: OpenAIStreamState;
  private readonly parser: EventSourceParser;

  constructor(
    private readonly req: StreamRequest,
    private readonly o: ChunkStreamOptions,
  ) {
    this.state = new OpenAIStreamState(o.name);
    this.parser = createParser({ onEvent: (e) => this.onEvent(e.data) });
    this.watchdog = new IdleWatchdog(o.clock, o.timeoutMs, () => this.waiting(), () => this.http.abort(new Error("idle timeout")));
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<Result> {
    if (this.available()) return Promise.resolve(this.take());
    if (this.failed && this.phase !== Phase.Closed) {
      this.close();
      return Promise.reject(this.failure);
    }
    switch (this.phase) {
      case Phase.Idle:
        return this.start();
      case Phase.Ended:
        this.phase = Phase.Closed;
        return this.released!.then(() => DONE);
      case Phase.Closed:
        return Promise.resolve(DONE);
      default:
        return new Promise<Result>((resolve, reject) => {
          this.waiter = { resolve, reject };
          this.watchdog.touch();
          if (this.paused) {
            this.paused = false;
            this.res?.body.resume();
          }
        });
    }
  }

  return(): Promise<Result> {
    const released = this.phase === Phase.Ended ? this.released : undefined;
    this.close();
    return released ? released.then(() => DONE) : Promise.resolve(DONE);
  }

  /** True when a chunk can be taken now: parses unparsed payloads until one gives a chunk. */
  private available(): boolean {
    while (this.head === this.queue.length && this.rawHead < this.raw.length && !this.failed) this.parseOne();
    if (this.rawHead === this.raw.length && this.raw.length > 0) {
      this.raw = [];
      this.rawHead = 0;
    }
    if (this.head === this.queue.length && this.phase === Phase.Ended && !this.finalQueued && !this.failed && this.rawHead === this.raw.length) {
      this.finalQueued = true;
      for (const chunk of this.state.final()) this.queue.push(chunk);
    }
    return this.head < this.queue.length;
  }

  private parseOne(): void {
    const data = this.raw[this.rawHead]!;
    this.raw[this.rawHead++] = "";
    try {
      for (const chunk of this.state.accept(data)) this.queue.push(chunk);
    } catch (err) {
      // Chunks parsed before it are still handed out first (next() takes the queue before the failure).
      this.raw = [];
      this.rawHead = 0;
      this.fail(err);
    }
  }

  private take(): Result {
    const value = this.queue[this.head]!;
    this.queue[this.head++] = undefined as unknown as ProviderChunk;
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    }
    return { done: false, value };
  }

  private async start(): Promise<Result> {
    this.phase = Phase.Opening;
    const signal = this.req.signal;
    try {
      signal.throwIfAborted();
      signal.addEventListener("abort", this.onCallerAbort, { once: true });
      this.watchdog.start();
      this.res = await this.o.open(this.http.signal);
    } catch (err) {
      this.fail(err);
    }
    const res = this.res;
    if (this.failed || !res) {
      this.close();
      throw this.failure;
    }
    this.phase = Phase.Reading;
    res.body.setEncoding("utf8");
    res.body.on("data", this.onData);
    res.body.on("end", this.onEnd);
    res.body.on("error", this.onError);
    res.body.on("close", this.onClose);
    this.hooked = true;
    return this.next();
  }

  private readonly onData = (text: string): void => {
    this.watchdog.touch();
    try {
      this.parser.feed(text);
    } catch (err) {
      this.fail(err);
    }
    if (this.sawDone && !this.failed) this.end();
    else if (!this.failed && this.unread() > QUEUE_HIGH && !this.waiter && !this.paused) {
      this.paused = true;
      this.res!.body.pause();
    }
    this.wake();
  };

  private onEvent(data: string): void {
    if (this.sawDone || this.failed) return;
    if (data.trim() === "[DONE]") this.sawDone = true;
    else this.raw.push(data);
  }

  /** Chunks and payloads read but not taken yet. */
  private unread(): number {
    return this.queue.length - this.head + this.raw.length - this.rawHead;
  }

  private readonly onEnd = (): void => {
    if (this.phase !== Phase.Reading) return;
    try {
      // Dispatch a last event that lacked its blank line, as the spec'd stream end would.
      this.parser.reset({ consume: true });
    } catch (err) {
      this.fail(err);
    }
    if (!this.failed) {
      // A stream that ends without `[DONE]` is finished only if a payload said so: parse them all.
      if (!this.sawDone) while (this.rawHead < this.raw.length && !this.failed) this.parseOne();
    }
    if (!this.failed) {
      if (this.sawDone || this.state.finished) this.end();
      else this.fail(new ProviderError(incompleteStreamError(this.o.name)));
    }
    this.wake();
  };

  private readonly onError = (err: unknown): void => {
    if (this.phase !== Phase.Reading) return;
    this.fail(err);
    this.wake();
  };

  /** Closed before its end (a reset without an error event): cut short. */
  private readonly onClose = (): void => this.onError(new Error("the response closed before its end"));

  private readonly onCallerAbort = (): void => {
    this.http.abort(this.req.signal.reason);
    // An interruption: reported at once, whatever was parsed but not taken yet is dropped.
    this.queue = [];
    this.head = 0;
    this.raw = [];
    this.rawHead = 0;
    this.fail(this.req.signal.reason);
    this.wake();
  };

  /** The answer is complete: what comes after the text, then the socket goes back to the pool. */
  private end(): void {
    this.phase = Phase.Ended;
    this.unhook();
    this.released = this.res!.release(true);
  }

  /** The first failure wins, classified as the generator's catch did. */
  private fail(err: unknown): void {
    if (this.failed || this.phase === Phase.Closed) return;
    this.failed = true;
    this.failure = this.classify(err);
    this.unhook();
    // After the end the socket is already back in the pool (a bad payload found while parsing late).
    if (this.phase !== Phase.Ended) void this.res?.release(false);
  }

  private classify(err: unknown): unknown {
    // An abort by the caller is an interruption, never a provider failure.
    if (this.req.signal.aborted) return this.req.signal.reason;
    if (this.watchdog.fired) return new ProviderError(timeoutError(this.o.name, this.o.timeoutMs), { cause: err });
    if (err instanceof ProviderError) return err;
    if (!this.res) return new ProviderError(classifyConnectError(err, this.o.name), { cause: err });
    return new ProviderError(incompleteStreamError(this.o.name, err), { cause: err });
  }

  /** Hands the next chunk (or the failure, or the end) to a consumer waiting for it. */
  private wake(): void {
    const w = this.waiter;
    if (!w) return;
    if (this.available()) {
      this.waiter = null;
      w.resolve(this.take());
    } else if (this.failed) {
      this.waiter = null;
      this.close();
      w.reject(this.failure);
    } else if (this.phase === Phase.Ended) {
      this.waiter = null;
      this.phase = Phase.Closed;
      void this.released!.then(() => w.resolve(DONE));
    }
  }

  /** True while the consumer waits on the server (not while it works on what it got). */
  private waiting(): boolean {
    return this.phase === Phase.Opening || (this.waiter !== null && this.unread() === 0);
  }

  private unhook(): void {
    this.watchdog.stop();
    this.req.signal.removeEventListener("abort", this.onCallerAbort);
    const body = this.res?.body;
    if (!body || !this.hooked) return;
    this.hooked = false;
    body.off("data", this.onData);
    body.off("end", this.onEnd);
    body.off("error", this.onError);
    body.off("close", this.onClose);
    // `release` and node's own handling still see errors; one that comes now must not be unhandled.
    body.on("error", ignore);
  }

  private close(): void {
    if (this.phase === Phase.Closed) return;
    const ended = this.phase === Phase.Ended;
    this.phase = Phase.Closed;
    this.queue = [];
    this.head = 0;
    this.raw = [];
    this.rawHead = 0;
    this.unhook();
    // Stopped early (a `break`, a failure): what the server would still send could not be told
    // from the next response, so the socket is dropped.
    if (!ended) void this.res?.release(false);
  }
}

function ignore(): void {}

/**
 * Fires `onIdle` once the server has been silent for `ms` while the consumer waited on it. Time
 * the consumer spends on what it got is not the server's: it never counts. Armed once per `ms`
 * (it looks at the last activity when it fires), not once per chunk.
 */
class IdleWatchdog {
  fired = false;
  private timer: TimerHandle | null = null;
  private since = 0;

  constructor(
    private readonly clock: Clock,
    private readonly ms: number,
    private readonly waiting: () => boolean,
    private readonly onIdle: () => void,
  ) {}

  start(): void {
    this.touch();
    this.arm(this.ms);
  }

  /** Bytes came, or the consumer went back to waiting: the silence counts from now. */
  touch(): void {
    this.since = this.clock.monotonic();
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = null;
  }

  private arm(ms: number): void {
    this.timer = this.clock.setTimeout(this.check, ms);
  }

  private readonly check = (): void => {
    this.timer = null;
    if (!this.waiting()) return this.arm(this.ms);
    const silent = this.clock.monotonic() - this.since;
    if (silent < this.ms) return this.arm(this.ms - silent);
    this.fired = true;
    this.onIdle();
  };
}
