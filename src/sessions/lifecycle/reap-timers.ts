/**
 * The registry of pending reaps: at most one timer per session. Scheduling again replaces the
 * pending one; resume, submit and re-attach cancel it.
 */
import type { Clock, TimerHandle } from "../../lib/clock.js";

export class ReapTimers {
  private readonly timers = new Map<string, TimerHandle>();

  constructor(private readonly clock: Clock) {}

  schedule(sessionId: string, delayMs: number, fire: () => void): void {
    this.cancel(sessionId);
    const handle = this.clock.setTimeout(() => {
      if (this.timers.get(sessionId) !== handle) return;
      this.timers.delete(sessionId);
      fire();
    }, delayMs);
    this.timers.set(sessionId, handle);
  }

  cancel(sessionId: string): boolean {
    const handle = this.timers.get(sessionId);
    if (!handle) return false;
    handle.cancel();
    this.timers.delete(sessionId);
    return true;
  }

  has(sessionId: string): boolean {
    return this.timers.has(sessionId);
  }

  get size(): number {
    return this.timers.size;
  }

  cancelAll(): void {
    for (const handle of this.timers.values()) handle.cancel();
    this.timers.clear();
  }
}
