/**
 * One subscribed session: its seq watermark, its subscribers, and the buffer that holds live
 * frames while a catch-up is in flight. The rule that keeps a UI correct across reconnects:
 * a frame is applied only if its seq is above the watermark, so nothing is ever applied twice,
 * and the watermark only moves forward.
 */
import { EventType, type Frame, type MessageSnapshot, type SinceResult } from "../protocol/index.js";

export interface SubscribeOptions {
  /** Apply only frames with seq > afterSeq. @default the watermark set by createSession/resumeSession */
  afterSeq?: number;
  /**
   * Text so far of a message whose deltas this client may have missed (they were evicted from
   * the server's replay ring while it was away): replace the message's text with `snapshot.text`.
   * With this handler set, deltas already covered by a snapshot are not delivered again.
   */
  onSnapshot?: (snapshot: MessageSnapshot) => void;
  /** The subscription was dropped (the session is gone: 4007 on resume). No more frames come. */
  onDropped?: (err: Error) => void;
  /** A catch-up failed, or durable events were no longer retained (`truncated`): reload the session. */
  onGap?: (info: { session_id: string; reason: string; error?: Error }) => void;
}

export type FrameHandler = (frame: Frame) => void;

interface Subscriber {
  handler: FrameHandler;
  opts: SubscribeOptions;
}

const DELTA_TYPES: ReadonlySet<string> = new Set([EventType.MessageDelta, EventType.ReasoningDelta]);

export class SessionStream {
  watermark: number | undefined;
  private readonly subscribers = new Set<Subscriber>();
  private buffer: Frame[] | null = null;
  private generation = 0;

  constructor(
    public sessionId: string,
    watermark: number | undefined,
    private readonly onHandlerError: (err: unknown) => void,
  ) {
    this.watermark = watermark;
  }

  add(handler: FrameHandler, opts: SubscribeOptions): () => void {
    const sub = { handler, opts };
    this.subscribers.add(sub);
    return () => {
      this.subscribers.delete(sub);
    };
  }

  get empty(): boolean {
    return this.subscribers.size === 0;
  }

  get catchingUp(): boolean {
    return this.buffer !== null;
  }

  /** A live frame from the socket. */
  receive(frame: Frame): void {
    if (this.buffer) this.buffer.push(frame);
    else this.apply(frame);
  }

  /** Raises the watermark only if none is set (a snapshot's `latest_seq` covers what came before). */
  seed(seq: number): void {
    if (this.watermark === undefined) this.watermark = seq;
  }

  /** Starts buffering live frames; returns a token that finish/abort must present. */
  beginCatchUp(): number {
    this.buffer = [];
    return ++this.generation;
  }

  /**
   * Applies a `since` answer, then the live frames buffered meanwhile, de-duplicating by seq.
   * Snapshots are handed over at their place in seq order, so a `message.start` replayed after
   * a snapshot cannot wipe the text it restored.
   */
  finishCatchUp(token: number, since: SinceResult): void {
    if (token !== this.generation || !this.buffer) return;
    const startWatermark = this.watermark ?? 0;
    const snapshots = since.snapshots.filter((s) => s.as_of_seq > startWatermark).sort((a, b) => a.as_of_seq - b.as_of_seq);
    const covered = new Map(snapshots.map((s) => [s.message_id, s.as_of_seq]));
    const skip = (sub: Subscriber, frame: Frame): boolean => {
      if (!sub.opts.onSnapshot || !DELTA_TYPES.has(frame.type) || frame.seq === undefined) return false;
      const asOf = covered.get((frame.payload as { message_id?: string })?.message_id ?? "");
      return asOf !== undefined && frame.seq <= asOf;
    };
    const events = [...since.events].sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0));
    let next = 0;
    for (const frame of events) {
      while (next < snapshots.length && snapshots[next]!.as_of_seq < (frame.seq ?? 0)) this.deliverSnapshot(snapshots[next++]!);
      this.apply(frame, skip);
    }
    while (next < snapshots.length) this.deliverSnapshot(snapshots[next++]!);
    // Everything up to latest_seq is now applied or covered by a snapshot (evicted deltas).
    if (since.latest_seq > (this.watermark ?? -1)) this.watermark = since.latest_seq;
    const buffered = this.buffer;
    this.buffer = null;
    for (const frame of buffered) this.apply(frame, skip);
  }

  /**
   * Gives up on a catch-up. Buffered frames are discarded, not applied: applying them would move
   * the watermark past the gap, and the next catch-up would then never fetch it.
   */
  abortCatchUp(token: number): void {
    if (token !== this.generation) return;
    this.buffer = null;
  }

  dropped(err: Error): void {
    this.buffer = null;
    for (const sub of [...this.subscribers]) this.safely(() => sub.opts.onDropped?.(err));
    this.subscribers.clear();
  }

  gap(reason: string, error?: Error): void {
    const info = error ? { session_id: this.sessionId, reason, error } : { session_id: this.sessionId, reason };
    for (const sub of [...this.subscribers]) this.safely(() => sub.opts.onGap?.(info));
  }

  private apply(frame: Frame, skip?: (sub: Subscriber, frame: Frame) => boolean): void {
    const seq = frame.seq;
    if (seq !== undefined) {
      if (this.watermark !== undefined && seq <= this.watermark) return; // seen already: never twice
      this.watermark = seq;
    }
    for (const sub of [...this.subscribers]) {
      if (skip?.(sub, frame)) continue;
      this.safely(() => sub.handler(frame));
    }
  }

  private deliverSnapshot(snapshot: MessageSnapshot): void {
    for (const sub of [...this.subscribers]) this.safely(() => sub.opts.onSnapshot?.(snapshot));
  }

  private safely(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.onHandlerError(err);
    }
  }
}
