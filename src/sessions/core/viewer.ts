/**
 * A viewer is anything that shows a session to someone: a WebSocket connection, an SSE stream.
 * Transports implement it; the session layer only pushes frames into it.
 */
import type { Frame } from "../../protocol/index.js";

export interface Viewer {
  /** Unique per connection. */
  readonly id: string;
  /** `wire` is the frame already encoded as a WebSocket notification (encoded once per broadcast). */
  send(frame: Frame, wire: string): void;
}
