/**
 * What the rest of Tether reports for metrics, as a small interface: the Prometheus
 * implementation lives with the HTTP transport; tests and `--ws-only` use the no-op one.
 *
 * Turns, tool calls and their errors are read off the frames a session delivers (one observer per
 * session's event log, `sessionFrames()`), so nothing in the agent loop reports them separately
 * and a turn is counted once, where it runs. Everything on the per-delta path is a field update.
 */

/** The part of a frame the metrics read (a protocol `Frame`). */
export interface ObservedFrame {
  type: string;
  /** When the frame was emitted (ms since the epoch). */
  ts: number;
  payload: unknown;
}

/** One session's frames as they are delivered (once per frame, not per viewer). */
export interface FrameMetrics {
  frameDelivered(frame: ObservedFrame): void;
}

export type Transport = "ws" | "sse" | "http";

export interface Metrics {
  /** An observer for one session's event log (its own state: when its turn started, its first token). */
  sessionFrames(): FrameMetrics;
  /** A live session ended in this process. */
  sessionEnded(reason: string): void;
  /** The live registry refused a session state transition its table does not allow (a bug in the caller). */
  transitionRefused(from: string, to: string): void;
  connectionOpened(transport: Transport): void;
  connectionClosed(transport: Transport): void;
  /** A client came back: a WebSocket `session.resume` with `after_seq`, an SSE stream with `Last-Event-ID`. */
  reconnected(transport: "ws" | "sse"): void;
  /** One store commit (a group commit's batch), how long it took and whether it failed. */
  storeCommitted(seconds: number, failed: boolean): void;
  /** The same metrics, with `profile` on what is labelled by profile (turns). */
  forProfile(profile: string): Metrics;
}

const noopFrames: FrameMetrics = { frameDelivered: () => undefined };

export const noopMetrics: Metrics = {
  sessionFrames: () => noopFrames,
  sessionEnded: () => undefined,
  transitionRefused: () => undefined,
  connectionOpened: () => undefined,
  connectionClosed: () => undefined,
  reconnected: () => undefined,
  storeCommitted: () => undefined,
  forProfile: () => noopMetrics,
};
