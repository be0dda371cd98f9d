/**
 * A viewer that queues one session's frames for an HTTP response to consume in seq order
 * (an SSE stream, a chat completion following its turn). Frames arrive from the event log already
 * in order; `next()` hands them out one by one, or null once the tap is closed or `signal` aborts.
 */
import type { Frame } from "../../protocol/index.js";
import type { Viewer } from "../../sessions/index.js";
import { Wakeup } from "./wakeup.js";

let tapCounter = 0;

export class FrameTap implements Viewer {
  readonly id = `http_${++tapCounter}`;
  private readonly queue: Frame[] = [];
  private readonly wakeup = new Wakeup();
  private closed = false;

  send(frame: Frame): void {
    if (this.closed) return;
    this.queue.push(frame);
    this.wakeup.wake();
  }

  /** Frames received so far and not yet taken (used after a catch-up read). */
  drain(): Frame[] {
    return this.queue.splice(0, this.queue.length);
  }

  async next(signal?: AbortSignal): Promise<Frame | null> {
    for (;;) {
      const frame = this.queue.shift();
      if (frame) return frame;
      if (this.closed || signal?.aborted) return null;
      await this.wakeup.wait(signal);
    }
  }

  close(): void {
    this.closed = true;
    this.wakeup.wake();
  }
}
