/**
 * Flow control for one connection: a viewer that reads slower than the agent writes must never
 * slow the agent or the other viewers, and must never grow the gateway's memory without bound.
 *
 *   const flow = new ViewerFlow(limits, ws, { send, overflow, resync });
 *   flow.offer(frame, wire);      // a session frame for this connection
 *   flow.answer(text);            // an RPC answer or a global frame
 *   socket.on("drain", () => flow.drained());
 *
 * The send buffer is watched through `bufferedAmount` (bytes queued in `ws` and the socket):
 * - over `softBytes` the viewer is *lagging*: transient frames (deltas) are skipped for it, durable
 *   frames and answers still go (they are small and the client cannot rebuild them from a snapshot);
 * - once the buffer is back under half the soft limit (on the socket's `drain`, or at a later send),
 *   it gets one `session.resync { session_id, from_seq }` per session it missed frames of, before
 *   any further frame of that session, and recovers through `session.events.since` + snapshots;
 * - over `hardBytes` the connection is closed with 1013 (try again later) and the client reconnects.
 * Why skip deltas instead of queueing them: deltas are the bulk of a stream and their text is in
 * the snapshot, so a lagging viewer costs the gateway almost nothing while it catches up.
 */
import { isTransientEvent, type Frame } from "../protocol/index.js";
import type { WireText } from "./wire-text.js";

export interface FlowLimits {
  /** Over this many buffered bytes the viewer lags: transient frames are skipped. */
  softBytes: number;
  /** Over this many buffered bytes the connection is closed with 1013. */
  hardBytes: number;
}

export const DEFAULT_FLOW_LIMITS: FlowLimits = { softBytes: 8 * 1024 * 1024, hardBytes: 64 * 1024 * 1024 };

/** The close code for a viewer over the hard limit (RFC 6455 "Try Again Later"). */
export const CLOSE_SLOW_VIEWER = 1013;

export interface FlowSink {
  /** `frame`: the session frame `text` encodes (its viewers may share what is built from it). */
  send(text: WireText, frame?: Frame): void;
  /** Over the hard limit: close the connection (1013). Called once. */
  overflow(): void;
  /** Sent when lagging ends, once per session whose frames were skipped. */
  resync(sessionId: string, fromSeq: number): void;
}

export interface BufferedSocket {
  readonly bufferedAmount: number;
}

export class ViewerFlow {
  private lagging = false;
  private over = false;
  /** Sessions with skipped frames → the last seq before the first skipped one. Lazily created. */
  private skipped: Map<string, number> | undefined;
  /** Frames skipped in all (for logs and tests). */
  skippedFrames = 0;

  constructor(
    private readonly limits: FlowLimits,
    private readonly socket: BufferedSocket,
    private readonly sink: FlowSink,
  ) {
    if (!(limits.softBytes > 0) || !(limits.hardBytes >= limits.softBytes)) {
      throw new RangeError("ViewerFlow: need 0 < softBytes <= hardBytes");
    }
  }

  get isLagging(): boolean {
    return this.lagging;
  }

  /** A session frame for this viewer. */
  offer(frame: Frame, wire: string): void {
    if (!this.admit()) return;
    if (this.lagging && isTransientEvent(frame.type)) {
      this.skippedFrames++;
      this.skipped ??= new Map();
      if (!this.skipped.has(frame.session_id)) this.skipped.set(frame.session_id, (frame.seq ?? 1) - 1);
      return;
    }
    this.sink.send(wire, frame);
  }

  /** An RPC answer or a global frame: never skipped, but counted against the hard limit. */
  answer(text: WireText): void {
    if (this.admit()) this.sink.send(text);
  }

  /** The socket flushed its buffer: a lagging viewer may recover now. */
  drained(): void {
    if (this.lagging && !this.over && this.socket.bufferedAmount <= this.limits.softBytes / 2) this.recover();
  }

  /** Checks the buffer before a send; false when the connection is (now) over the hard limit. */
  private admit(): boolean {
    if (this.over) return false;
    const buffered = this.socket.bufferedAmount;
    if (buffered > this.limits.hardBytes) {
      this.over = true;
      this.sink.overflow();
      return false;
    }
    if (this.lagging) {
      if (buffered <= this.limits.softBytes / 2) this.recover();
    } else if (buffered > this.limits.softBytes) {
      this.lagging = true;
    }
    return true;
  }

  private recover(): void {
    this.lagging = false;
    const skipped = this.skipped;
    if (!skipped || skipped.size === 0) return;
    this.skipped = undefined;
    for (const [sessionId, fromSeq] of skipped) this.sink.resync(sessionId, fromSeq);
  }
}
