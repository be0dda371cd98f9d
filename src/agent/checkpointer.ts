/**
 * Bounds what a crash can lose of a streaming message: its text so far is written to the message
 * row at most every `intervalMs` (monotonic clock), so a killed process loses at most that much,
 * while a fast stream does not turn into a write per token.
 */
import type { Clock } from "../lib/clock.js";

export class Checkpointer {
  private last: number;
  private lastLength = 0;

  constructor(
    private readonly clock: Clock,
    private readonly intervalMs: number,
    private readonly write: (text: string) => void,
  ) {
    this.last = clock.monotonic();
  }

  /** Call after each text chunk with the text so far. */
  offer(text: string): void {
    const now = this.clock.monotonic();
    if (now - this.last < this.intervalMs || text.length === this.lastLength) return;
    this.last = now;
    this.lastLength = text.length;
    this.write(text);
  }
}
