/**
 * `--url` / `TETHER_URL` as users paste them: what `tether serve` prints (`http://127.0.0.1:8787`),
 * a bare `127.0.0.1:8787`, or the WebSocket URL itself all reach `ws://127.0.0.1:8787/ws`.
 *
 *   normalizeGatewayUrl("127.0.0.1:8787")          // "ws://127.0.0.1:8787/ws"
 *   normalizeGatewayUrl("https://gw.example/tether") // "wss://gw.example/tether/ws"
 */
export const EXPECTED_URL = "ws://HOST:PORT/ws, http://HOST:PORT or HOST:PORT";

export class GatewayUrlError extends Error {
  constructor(input: string) {
    super(`not a gateway URL: "${input}" (expected ${EXPECTED_URL})`);
    this.name = "GatewayUrlError";
  }
}

const SCHEMES: Record<string, string> = { "ws:": "ws:", "wss:": "wss:", "http:": "ws:", "https:": "wss:" };

export function normalizeGatewayUrl(input: string): string {
  const text = input.trim();
  if (!text) throw new GatewayUrlError(input);
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `ws://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new GatewayUrlError(input);
  }
  const scheme = SCHEMES[url.protocol];
  if (!scheme || !url.hostname || url.username || url.password) throw new GatewayUrlError(input);
  url.protocol = scheme;
  // The endpoint is /ws; a path before it (a reverse proxy's prefix) is kept.
  const path = url.pathname.replace(/\/+$/, "");
  url.pathname = path.endsWith("/ws") ? path : `${path}/ws`;
  url.hash = "";
  return url.toString();
}
