/**
 * The part of the WebSocket API the SDK uses: the browser surface (on* handlers, send, close,
 * readyState), which `ws` also implements. Nothing Node-only, so the SDK runs in browsers as is.
 */
export interface WebSocketLike {
  readonly readyState: number;
  // `never` parameters: any concrete event type (DOM MessageEvent, ws's MessageEvent) fits.
  onopen: ((event: never) => void) | null;
  onmessage: ((event: never) => void) | null;
  onclose: ((event: never) => void) | null;
  onerror: ((event: never) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

export type WebSocketConstructor = new (url: string) => WebSocketLike;

/** The caller's constructor, else the platform's (browsers, Node >= 22); a clear error otherwise. */
export function resolveWebSocket(given: WebSocketConstructor | undefined): WebSocketConstructor {
  if (given) return given;
  const platform = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (platform) return platform;
  throw new TypeError(
    "TetherClient: no global WebSocket in this runtime (Node 20). Pass one: " +
      'import WebSocket from "ws"; new TetherClient({ url, WebSocket })',
  );
}

/** WebSocket.OPEN; the constant is not on every implementation's prototype, so it is spelled out. */
export const WS_OPEN = 1;
