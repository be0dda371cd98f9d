/**
 * A viewer that queues one session's frames for an HTTP response to consume in seq order
 * (a chat completion or a Responses stream following its turn). Frames arrive from the event log
 * already in order; `next()` hands them out one by one, or null once the tap is closed or `signal`
 * aborts.
 *
 * A stream bound to a response (`limitTo`) is bounded: while the client is behind (the response
 * waits for `drain`) and the queue passes the hard limit, the tap lets go of the queue, closes and
 * reports the overflow once — the stream then ends, as a WebSocket over the limit is closed with
 * 1013. OpenAI streams cannot skip deltas (their clients build the text from them, with no
 * snapshots to heal a gap), so the hard limit is the only step; the session itself runs on, and
 * a Responses client resumes with `starting_after`. The sessions API uses SseFlowTap instead.
 *
 * When this process drops the session's runtime because another took its lease, the tap gets the
 * `session.resync` notice (a frame without seq, moved-viewers.ts): the turn it follows goes on (or
 * is ended) elsewhere, and the bus replays only its ring, so the frames that would end it may
 * never come. The tap closes and says `moved`: each stream ends in its documented way (runs:
 * reconnect with Last-Event-ID; Responses: the end read from the log; chat: an error event).
 */
import { EventType, type Frame } from "../../protocol/index.js";
import type { Viewer } from "../../sessions/index.js";
import { Wakeup } from "./wakeup.js";

let tapCounter = 0;

export interface TapBound {
  hardBytes: number;
  /** The response waits for the client (its buffer is over the high-water mark). */
  blocked(): boolean;
  /** Called once, when the queue was dropped over the hard limit. */
  overflow(): void;
}

/** How long an overflowed stream may take to end before its connection is cut (as WebSocket 1013). */
export const OVERFLOW_CUT_MS = 1000;

/** Bounds `tap` by the hard limit while `sse` is the response it feeds; logs and ends on overflow. */
export function boundToStream(
  tap: FrameTap,
  sse: { blocked(): boolean; cutAfter(graceMs: number): void },
  hardBytes: number,
  onOverflow: () => void,
): void {
  tap.limitTo({
    hardBytes,
    blocked: () => sse.blocked(),
    overflow() {
      onOverflow();
      sse.cutAfter(OVERFLOW_CUT_MS);
    },
  });
}

export class FrameTap implements Viewer {
  readonly id = `http_${++tapCounter}`;
  private readonly queue: Array<{ frame: Frame; bytes: number }> = [];
  private queuedBytes = 0;
  private readonly wakeup = new Wakeup();
  private closed = false;
  private bound: TapBound | undefined;
  /** True once the queue was dropped over the hard limit. */
  overflowed = false;
  /** True once another process took the session's lease: no frame here ends the turn any more. */
  moved = false;

  limitTo(bound: TapBound): void {
    this.bound = bound;
  }

  send(frame: Frame, wire?: string): void {
    if (this.closed) return;
    if (frame.type === EventType.SessionResync && frame.seq === undefined) {
      // OpenAI streams skip nothing, so the only resync they get is the moved notice.
      this.moved = true;
      this.close();
      return;
    }
    // A frame's WebSocket text is about the size of what the stream writes for it, and is
    // already encoded once per broadcast: counting it costs nothing.
    const bytes = wire?.length ?? 0;
    const bound = this.bound;
    if (bound && this.queuedBytes + bytes > bound.hardBytes && bound.blocked()) {
      // Memory is what the limit protects: let go of the queue; next() answers null from now on.
      this.overflowed = true;
      this.queue.length = 0;
      this.queuedBytes = 0;
      this.close();
      bound.overflow();
      return;
    }
    this.queue.push({ frame, bytes });
    this.queuedBytes += bytes;
    this.wakeup.wake();
  }

  async next(signal?: AbortSignal): Promise<Frame | null> {
    for (;;) {
      const head = this.queue.shift();
      if (head) {
        this.queuedBytes -= head.bytes;
        return head.frame;
      }
      if (this.closed || signal?.aborted) return null;
      await this.wakeup.wait(signal);
    }
  }

  /** No more frames are taken; those already queued are still handed out. */
  close(): void {
    this.closed = true;
    this.wakeup.wake();
  }
}
