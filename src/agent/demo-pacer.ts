/**
 * The demo provider's pacing, shared by every stream of one provider: one timer releases the next
 * chunk of every stream that is due, instead of one timer (and one abort listener) per stream per
 * chunk. With 1,000 streams at 50 chunks/s that is at most 200 timer callbacks a second instead of
 * 50,000, and the chunks released together reach the group commit together (one transaction, one
 * delivery pass) instead of spread over many event-loop turns.
 *
 *   const pace = pacer.start(signal);   // a stream begins: its first chunk goes now
 *   await pace.next();                  // before each later chunk; rejects with signal.reason
 *   pace.end();                         // the stream is done (finally)
 *
 * Time: the timer ticks on one grid, a quarter of the interval apart (anchored at the first wait
 * after an idle spell, so a lone stream is paced exactly). A stream's next chunk is due one
 * interval after the tick that released its last one, and goes at the first tick at or after
 * that: a stream that joins a busy pacer waits at most a quarter interval more for its second
 * chunk, and is never early. Why a quarter and not the whole interval: streams that started at
 * different moments stay spread over four ticks, so each tick's burst — the delay of the last
 * viewer served in it — is a quarter of what one shared tick would make it. The grid is absolute:
 * a tick that fires late (a busy event loop) does not push the later ones back, so lateness never
 * adds up over a turn; a stream that missed ticks gets one chunk per tick until it is on time.
 */
import type { Clock, TimerHandle } from "../lib/clock.js";

export interface PacedStream {
  /**
   * Resolves with `value` when this stream's next chunk is due; rejects with the signal's reason
   * once aborted. (The value lets a caller hand out its iterator result with no promise of its own.)
   */
  next<T = void>(value?: T): Promise<T>;
  /** The stream is over: drops its wait and its abort listener. */
  end(): void;
}

/** Node fires a timer by its millisecond loop time: `monotonic()` may read a little short of the tick. */
const EARLY_SLACK_MS = 1;

class Stream implements PacedStream {
  /** The grid time of the tick that released this stream's last chunk (its start, at first). */
  last: number;
  /** The tick this stream waits for; NaN when it does not wait. */
  tick = Number.NaN;
  resolve: ((value: unknown) => void) | null = null;
  private value: unknown = undefined;
  reject: ((err: unknown) => void) | null = null;
  private readonly onAbort = (): void => {
    const reject = this.reject;
    this.clear();
    reject?.(this.signal.reason);
  };

  constructor(
    private readonly pacer: DemoPacer,
    private readonly signal: AbortSignal,
    start: number,
  ) {
    this.last = start;
    signal.addEventListener("abort", this.onAbort, { once: true });
  }

  next<T = void>(value?: T): Promise<T> {
    if (this.signal.aborted) return Promise.reject(this.signal.reason);
    this.value = value;
    return new Promise<T>((resolve, reject) => {
      this.resolve = resolve as (value: unknown) => void;
      this.reject = reject;
      this.pacer.wait(this);
    });
  }

  end(): void {
    this.clear();
    this.signal.removeEventListener("abort", this.onAbort);
  }

  /** Released by the tick at grid time `at`. */
  release(at: number): void {
    const resolve = this.resolve;
    const value = this.value;
    this.last = at;
    this.clear();
    resolve?.(value);
  }

  private clear(): void {
    if (this.resolve) this.pacer.dropped();
    this.value = undefined;
    this.resolve = null;
    this.reject = null;
    this.tick = Number.NaN;
  }
}

export class DemoPacer {
  /** Streams waiting for a tick (a stream that ended or aborted has `resolve` null and is skipped). */
  private waiting: Stream[] = [];
  private timer: TimerHandle | null = null;
  /** Streams in `waiting` that still wait. */
  private pending = 0;
  private armedFor = Number.POSITIVE_INFINITY;
  private anchor = 0;

  /** The grid's step: a quarter of the interval (the interval itself when that is under 8 ms). */
  readonly tickMs: number;

  constructor(
    private readonly clock: Clock,
    readonly intervalMs: number,
  ) {
    if (!(intervalMs > 0)) throw new RangeError("DemoPacer: intervalMs must be > 0");
    this.tickMs = intervalMs >= 8 ? intervalMs / 4 : intervalMs;
  }

  /** A stream starting now; listens to `signal` once (not once per chunk). */
  start(signal: AbortSignal): PacedStream {
    return new Stream(this, signal, this.clock.monotonic());
  }

  /** Streams currently waiting for a tick (tests). */
  get waitingCount(): number {
    return this.pending;
  }

  /** @internal A stream's `next()`: queue it for the first tick at or after its due time. */
  wait(s: Stream): void {
    const due = s.last + this.intervalMs;
    if (this.pending === 0) this.anchor = due;
    this.pending++;
    const k = Math.ceil((due - this.anchor) / this.tickMs - 1e-9);
    s.tick = this.anchor + k * this.tickMs;
    this.waiting.push(s);
    if (s.tick < this.armedFor) this.arm(s.tick);
  }

  /** @internal A waiting stream was released, ended or aborted. */
  dropped(): void {
    this.pending--;
  }

  private arm(tick: number): void {
    this.timer?.cancel();
    this.armedFor = tick;
    this.timer = this.clock.setTimeout(this.fire, Math.max(0, tick - this.clock.monotonic()));
  }

  private readonly fire = (): void => {
    this.timer = null;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = this.clock.monotonic() + Math.min(EARLY_SLACK_MS, this.tickMs / 2);
    const waiting = this.waiting;
    const kept: Stream[] = [];
    this.waiting = kept;
    let next = Number.POSITIVE_INFINITY;
    for (const s of waiting) {
      if (!s.resolve) continue;
      if (s.tick <= now) s.release(s.tick);
      else {
        kept.push(s);
        if (s.tick < next) next = s.tick;
      }
    }
    if (next !== Number.POSITIVE_INFINITY) this.arm(next);
  };
}
