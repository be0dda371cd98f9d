/**
 * A bounded FrameTap for an SSE stream of the sessions API: the same flow control a WebSocket
 * viewer gets from `ViewerFlow`, with the same limits.
 *
 *   const tap = new SseFlowTap(limits);             // attach it as the session's viewer
 *   tap.bind({ pendingBytes, blocked, overflow });   // once the response exists (sse.ts measures)
 *   res.on("drain", () => tap.drained());
 *   for (let item; (item = await tap.next(signal)); ) item.resync === undefined ? write(item.frame) : catchUp();
 *
 * Why it is needed: the SSE loop awaits each write, so a client that stops reading stops the loop
 * while the session keeps delivering frames into the tap. The backlog is what the tap holds (each
 * frame counted by its wire text, about the size of its SSE event) plus what the response has not
 * yet handed to the kernel (`pendingBytes`). It is judged only while the response is `blocked`
 * (node said: wait for drain), i.e. while the client is really behind: otherwise the queue is only
 * a burst of frames delivered in one tick that the loop has not had its turn to write yet (a
 * WebSocket writes such a burst to the kernel at once; its `bufferedAmount` never sees it).
 * - over `softBytes` the stream is *lagging*: transient frames (deltas) are not queued, durable ones
 *   still are (the client cannot rebuild them; deltas are the bulk and their text is in a snapshot);
 * - once the backlog is back under half the soft limit, `next()` hands out one `{ resync }` item
 *   (the last seq before the first skipped frame), before any further frame: the loop sends
 *   `session.resync` and catches up through `since` + snapshots, as a reconnect would;
 * - over `hardBytes` the queue is dropped and `overflow()` is called once; `next()` then answers
 *   null and the response is ended, so the client reconnects with Last-Event-ID.
 * The decisions live here (no I/O), so they are unit-tested without sockets.
 */
import { isTransientEvent, type Frame } from "../../protocol/index.js";
import type { Viewer } from "../../sessions/index.js";
import type { FlowLimits } from "../viewer-flow.js";
import { Wakeup } from "./wakeup.js";

export interface SseFlowSink {
  /** Bytes written to the response and not yet taken by the kernel. */
  pendingBytes(): number;
  /** The response waits for the client (its buffer is full until `drain`). */
  blocked(): boolean;
  /** Over the hard limit: the stream must end. Called once. */
  overflow(): void;
}

/** Before `bind` nothing is written yet, so the client cannot be behind: never blocked. */
const UNBOUND: SseFlowSink = { pendingBytes: () => 0, blocked: () => false, overflow: () => undefined };

/** What `next()` hands out: a frame to write, or a resync to run before any further frame. */
export type SseTapItem = { frame: Frame; resync?: undefined } | { resync: number; frame?: undefined };

let tapCounter = 0;

export class SseFlowTap implements Viewer {
  readonly id = `sse_${++tapCounter}`;
  private readonly queue: Array<{ frame: Frame; bytes: number }> = [];
  private queuedBytes = 0;
  private lagging = false;
  private over = false;
  private closed = false;
  /** The last seq before the first frame skipped in this lagging episode. */
  private skippedFrom: number | undefined;
  private readonly wakeup = new Wakeup();
  /** Frames skipped in all (for logs and tests). */
  skippedFrames = 0;

  private sink = UNBOUND;

  constructor(private readonly limits: FlowLimits) {
    if (!(limits.softBytes > 0) || !(limits.hardBytes >= limits.softBytes)) {
      throw new RangeError("SseFlowTap: need 0 < softBytes <= hardBytes");
    }
  }

  /**
   * The response this tap feeds. Separate from the constructor because the tap is attached (and
   * may fill) before the response starts: attach first, then catch up, so no frame falls between.
   */
  bind(sink: SseFlowSink): void {
    this.sink = sink;
  }

  get isLagging(): boolean {
    return this.lagging;
  }

  get overflowed(): boolean {
    return this.over;
  }

  /** Bytes the client has not read yet, as far as the gateway holds them. */
  get backlogBytes(): number {
    return this.queuedBytes + this.sink.pendingBytes();
  }

  send(frame: Frame, wire: string): void {
    if (this.closed || this.over) return;
    const blocked = this.sink.blocked();
    const backlog = this.backlogBytes;
    if (!this.lagging && blocked && backlog > this.limits.softBytes) this.lagging = true;
    if (this.lagging && isTransientEvent(frame.type)) {
      this.skippedFrames++;
      this.skippedFrom ??= (frame.seq ?? 1) - 1;
      return;
    }
    // The WebSocket wire text is the frame JSON plus a 44-byte envelope: about its SSE event's size,
    // and already encoded once per broadcast, so counting costs nothing.
    const bytes = wire.length || JSON.stringify(frame).length;
    if (blocked && backlog + bytes > this.limits.hardBytes) {
      // Memory is what the limit protects: let go of the queue now, the client reconnects and
      // reads the durable frames from the store.
      this.over = true;
      this.sink.overflow();
      this.queue.length = 0;
      this.queuedBytes = 0;
      this.notify();
      return;
    }
    this.queue.push({ frame, bytes });
    this.queuedBytes += bytes;
    this.notify();
  }

  /** The response flushed its buffer: a lagging stream waiting for frames may recover now. */
  drained(): void {
    if (this.lagging) this.notify();
  }

  /**
   * The next item in seq order; null once the tap is closed, over the hard limit or `signal` aborts.
   * Recovery is checked here, in the loop that writes, so the resync lands in stream order.
   */
  async next(signal?: AbortSignal): Promise<SseTapItem | null> {
    for (;;) {
      if (this.over || this.closed || signal?.aborted) return null;
      if (this.lagging && this.backlogBytes <= this.limits.softBytes / 2) {
        this.lagging = false;
        const from = this.skippedFrom;
        this.skippedFrom = undefined;
        if (from !== undefined) return { resync: from };
      }
      const head = this.queue.shift();
      if (head) {
        this.queuedBytes -= head.bytes;
        return { frame: head.frame };
      }
      await this.wakeup.wait(signal);
    }
  }

  close(): void {
    this.closed = true;
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.notify();
  }

  private notify(): void {
    this.wakeup.wake();
  }
}
