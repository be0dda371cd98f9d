/**
 * The per-principal concurrent-turn limit. `turnCount` counts a principal's running and queued
 * turns in every profile (a key is one principal whichever profile it addresses); `pending` covers
 * requests admitted but whose submit has not registered its turn yet, so two requests racing past
 * the check cannot both take the last slot.
 */
import { ErrorCode, TetherError } from "../../protocol/index.js";
import type { Caller } from "../../sessions/index.js";

export class TurnLimiter {
  private readonly pending = new Map<string, number>();

  constructor(
    private readonly turnCount: (caller: Caller) => number,
    private readonly maxTurns: number,
  ) {}

  /** Runs `start` (which submits one turn) if the caller is under the limit; else 429. */
  async admit<T>(caller: Caller, start: () => Promise<T>): Promise<T> {
    const p = caller.principal;
    const inFlight = this.turnCount(caller) + (this.pending.get(p) ?? 0);
    if (inFlight >= this.maxTurns) {
      throw new TetherError(
        ErrorCode.RateLimited,
        `Too many concurrent turns for this API key (limit ${this.maxTurns}); retry when one finishes`,
        { limit: this.maxTurns },
      );
    }
    this.pending.set(p, (this.pending.get(p) ?? 0) + 1);
    try {
      return await start();
    } finally {
      const left = (this.pending.get(p) ?? 1) - 1;
      if (left > 0) this.pending.set(p, left);
      else this.pending.delete(p);
    }
  }
}
