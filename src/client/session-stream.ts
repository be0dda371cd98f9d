/**
 * One subscribed session: its seq watermark, its subscribers, and the buffer that holds live
 * frames while a catch-up is in flight. The rule that keeps a UI correct across reconnects:
 * a frame is applied only if its seq is above the watermark, so nothing is ever applied twice,
 * and the watermark only moves forward.
 */
import { EventType, type Frame, type MessageSnapshot, type MessageStartPayload, type SinceResult } from "../protocol/index.js";

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
  /**
   * The session is not live in the gateway any more (4001): no frames come until the app re-binds
   * it with `resumeSession()`. Reconnects skip it meanwhile; other sessions are not affected.
   */
  onSuspended?: (err: Error) => void;
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
  /** Set by a 4001: the subscription waits for the app to re-bind the session. */
  suspendedBy: Error | undefined;
  /** Assistant messages started and not completed → the epoch they were streaming under. */
  private streaming: Map<string, string> | undefined;

  constructor(
    public sessionId: string,
    watermark: number | undefined,
    private readonly onHandlerError: (err: unknown) => void,
    /** Sees every frame applied, before the subscribers (the client's tool-call handlers). */
    private readonly tap?: FrameHandler,
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
    // Suspended: applying frames past a gap would move the watermark over it.
    if (this.suspendedBy) return;
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
    for (const s of since.snapshots) (this.streaming ??= new Map()).set(s.message_id, since.epoch);
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

  /** 4001: stop until the app re-binds the session (resumeSession). */
  suspend(err: Error): void {
    this.buffer = null;
    if (this.suspendedBy) return;
    this.suspendedBy = err;
    for (const sub of [...this.subscribers]) this.safely(() => sub.opts.onSuspended?.(err));
  }

  /** A catch-up succeeded: the session is bound again. */
  resumed(): void {
    this.suspendedBy = undefined;
  }

  /** Assistant messages still streaming, as far as this client knows, that began under another epoch. */
  streamingBefore(epoch: string): string[] {
    const out: string[] = [];
    if (this.streaming) for (const [id, e] of this.streaming) if (e !== epoch) out.push(id);
    return out;
  }

  /** The stored text of a message (after a restart), handed over as a snapshot. */
  applyStoredText(snapshot: MessageSnapshot, final: boolean): void {
    this.deliverSnapshot(snapshot);
    if (final) this.streaming?.delete(snapshot.message_id);
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
    if (frame.type === EventType.MessageStart) {
      const p = frame.payload as MessageStartPayload;
      if (p.role === "assistant") (this.streaming ??= new Map()).set(p.message_id, frame.epoch);
    } else if (frame.type === EventType.MessageComplete) {
      this.streaming?.delete((frame.payload as { message_id: string }).message_id);
    }
    if (this.tap) this.safely(() => this.tap!(frame));
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
