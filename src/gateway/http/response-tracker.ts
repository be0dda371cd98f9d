/**
 * A response whose turn this process follows: the response as its frames built it so far, and —
 * for the request that made it with `stream: true` — the stream of its events, fed from the same
 * frames (one viewer per response, not one for the tracker and one more for its stream).
 *
 *   const tracker = new ResponseTracker(record, tap, { streamed: true, finish, release });
 *   tracker.events!.limitTo(bound);
 *   for (let e; (e = await tracker.events!.next(signal)); ) await sse.send(e.data, { event: e.type });
 *   const final = await tracker.done;
 *
 * A later stream of the same response while the turn runs (`GET /v1/responses/{id}?stream=true`,
 * a retried create with `stream: true`) follows the same tracker (`subscribe`): the frames it
 * has seen so far are built again into that stream's events after its `starting_after`, then
 * every new frame reaches it too — no second viewer, no replay from the log.
 *
 * A stream that falls behind past the hard limit (its client stopped reading) is let go of — its
 * queue dropped, the stream ended as any overflowed stream is — while the tracker follows the turn
 * on: the response still ends, and the client resumes with `starting_after`.
 */
import { EventType, type Frame } from "../../protocol/index.js";
import type { ResponseRecord } from "../../sessions/index.js";
import type { FrameTap, TapBound } from "./frame-tap.js";
import { ResponseBuilder, type ResponseEvent, type ResponseObject } from "./response-events.js";
import { Wakeup } from "./wakeup.js";

/** One event as the stream writes it. */
export interface QueuedEvent {
  type: string;
  data: string;
}

/** The events of one stream, queued for its writer; bounded like a FrameTap. */
export class ResponseEventQueue {
  private readonly queue: QueuedEvent[] = [];
  private queuedBytes = 0;
  private readonly wakeup = new Wakeup();
  private closed = false;
  private bound: TapBound | undefined;
  /** True once the queue was dropped over the hard limit. */
  overflowed = false;

  /** Bounds the queue by the hard limit while `bound.blocked()` says the stream's client is behind. */
  limitTo(bound: TapBound): void {
    this.bound = bound;
  }

  push(events: readonly ResponseEvent[]): void {
    for (const e of events) {
      if (this.closed) return;
      const data = JSON.stringify(e);
      if (this.bound && this.queuedBytes + data.length > this.bound.hardBytes && this.bound.blocked()) {
        this.overflowed = true;
        this.queue.length = 0;
        this.queuedBytes = 0;
        this.close();
        this.bound.overflow();
        return;
      }
      this.queue.push({ type: e.type, data });
      this.queuedBytes += data.length;
      this.wakeup.wake();
    }
  }

  async next(signal?: AbortSignal): Promise<QueuedEvent | null> {
    for (;;) {
      const head = this.queue.shift();
      if (head) {
        this.queuedBytes -= head.data.length;
        return head;
      }
      if (this.closed || signal?.aborted) return null;
      await this.wakeup.wait(signal);
    }
  }

  /** No more events are taken; those already queued are still handed out. */
  close(): void {
    this.closed = true;
    this.wakeup.wake();
  }
}

/**
 * How a followed turn's response is finished once the frames stop: `builder` as the frames left
 * it (done or not); answers the final object (stored once terminal).
 */
export type FinishTracked = (builder: ResponseBuilder) => Promise<ResponseObject>;

/** A stream that joined a tracked response: its own builder (its `starting_after`), its queue. */
interface Follower {
  builder: ResponseBuilder;
  queue: ResponseEventQueue;
}

export class ResponseTracker {
  readonly builder: ResponseBuilder;
  readonly done: Promise<ResponseObject>;
  /** The events of this response from `response.created` on, for the stream of the request that made it (`streamed`). */
  readonly events: ResponseEventQueue | null;
  /** The frames followed so far (the ring's own objects): what a stream joining later is built from. */
  private readonly frames: Frame[] = [];
  private readonly followers = new Set<Follower>();
  private final: ResponseObject | undefined;

  constructor(
    private readonly record: ResponseRecord,
    readonly tap: FrameTap,
    opts: {
      streamed: boolean;
      finish: FinishTracked;
      /** Runs once the frames stopped, before `finish` (the viewer detached). */
      release: () => Promise<void>;
    },
  ) {
    this.builder = new ResponseBuilder(record);
    this.events = opts.streamed ? new ResponseEventQueue() : null;
    this.events?.push(this.builder.created());
    this.done = this.follow(opts.finish, opts.release);
  }

  private async follow(finish: FinishTracked, release: () => Promise<void>): Promise<ResponseObject> {
    const listener = this.events;
    try {
      for (;;) {
        const frame = await this.tap.next();
        if (!frame || frame.type === EventType.SessionClosed) break;
        this.frames.push(frame);
        const events = this.builder.push(frame);
        if (events.length > 0) listener?.push(events);
        for (const f of this.followers) f.queue.push(f.builder.push(frame));
        if (this.builder.done) break;
      }
    } finally {
      this.tap.close();
      await release();
    }
    try {
      const final = await finish(this.builder);
      if (!this.builder.done) listener?.push([this.builder.endEvent(final)]);
      this.final = final;
      for (const f of this.followers) this.end(f, final);
      return final;
    } finally {
      listener?.close();
      for (const f of this.followers) f.queue.close();
      this.followers.clear();
    }
  }

  /**
   * A stream of this response's events numbered above `startingAfter`, from what the tracker has
   * followed so far on; closed once the response ended. `unsubscribe` it when its client leaves.
   */
  subscribe(startingAfter: number): ResponseEventQueue {
    const f: Follower = { builder: new ResponseBuilder(this.record, startingAfter), queue: new ResponseEventQueue() };
    f.queue.push(f.builder.created());
    for (const frame of this.frames) f.queue.push(f.builder.push(frame));
    if (this.final) {
      this.end(f, this.final);
      f.queue.close();
    } else this.followers.add(f);
    return f.queue;
  }

  unsubscribe(queue: ResponseEventQueue): void {
    for (const f of this.followers) if (f.queue === queue) this.followers.delete(f);
    queue.close();
  }

  /** A follower's terminal event when its frames did not bring one (see ResponseBuilder.endEvent). */
  private end(f: Follower, final: ResponseObject): void {
    if (!f.builder.done) f.queue.push([f.builder.endEvent(final)]);
  }
}
