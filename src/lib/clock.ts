/**
 * Time enters Tether only through a Clock, so reap timers, leases, checkpoints and sweeps can be
 * tested with a fake clock instead of sleeps.
 */
export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Monotonic milliseconds, for durations. */
  monotonic(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return { cancel: () => clearTimeout(t) };
  },
  sleep(ms, signal) {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const t = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(t);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  },
};

/**
 * A clock that moves only when told to. `advance(ms)` fires due timers in time order, letting
 * promise callbacks settle between them.
 */
export class FakeClock implements Clock {
  private t: number;
  private mono = 0;
  private timers: Array<{ at: number; fn: () => void; id: number }> = [];
  private nextId = 0;

  constructor(start = 1_700_000_000_000) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  monotonic(): number {
    return this.mono;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.timers.push({ at: this.mono + Math.max(0, ms), fn, id });
    return { cancel: () => (this.timers = this.timers.filter((x) => x.id !== id)) };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const h = this.setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        h.cancel();
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Number of timers not yet fired. */
  get pending(): number {
    return this.timers.length;
  }

  async advance(ms: number): Promise<void> {
    const target = this.mono + ms;
    // Work already under way (a promise chain about to set its next timer) runs before time moves:
    // otherwise an `await` in it would see the clock jump past timers it has not set yet.
    await settle();
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at || a.id - b.id);
      const next = this.timers[0];
      if (!next || next.at > target) break;
      this.timers.shift();
      this.t += next.at - this.mono;
      this.mono = next.at;
      next.fn();
      await settle();
    }
    this.t += target - this.mono;
    this.mono = target;
    await settle();
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
}
