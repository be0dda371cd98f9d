/**
 * What the rest of Tether reports for metrics, as a small interface: the Prometheus
 * implementation lives with the HTTP transport; tests and `--ws-only` use the no-op one.
 */
export interface Metrics {
  /** A frame was delivered to viewers (once per frame, not per viewer). */
  frameDelivered(type: string): void;
  /** A live session ended in this process. */
  sessionEnded(reason: string): void;
  connectionOpened(transport: "ws" | "sse" | "http"): void;
  connectionClosed(transport: "ws" | "sse" | "http"): void;
}

export const noopMetrics: Metrics = {
  frameDelivered: () => undefined,
  sessionEnded: () => undefined,
  connectionOpened: () => undefined,
  connectionClosed: () => undefined,
};
