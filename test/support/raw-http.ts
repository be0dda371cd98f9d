/**
 * Raw HTTP/1.1 over a TCP socket, for tests that need to send what a browser or an attacker sends
 * (any `Host`, any `Origin`, a WebSocket upgrade by hand) and read the status line and body back.
 */
import { connect } from "node:net";

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The body as JSON, or undefined when it is not JSON. */
  json: any;
}

/** Sends one request (`Connection: close`) and reads the whole answer. */
export function rawRequest(port: number, req: { method?: string; path: string; headers?: Record<string, string>; body?: string }): Promise<RawAnswer> {
  const lines = [`${req.method ?? "GET"} ${req.path} HTTP/1.1`];
  const headers: Record<string, string> = { connection: "close", ...req.headers };
  if (req.body !== undefined) headers["content-length"] = String(Buffer.byteLength(req.body));
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return exchange(port, `${lines.join("\r\n")}\r\n\r\n${req.body ?? ""}`, false);
}

/** A WebSocket upgrade by hand: the status line says whether the gateway took it (101) or refused it. */
export function rawUpgrade(port: number, headers: Record<string, string>, path = "/ws"): Promise<RawAnswer> {
  const all: Record<string, string> = {
    upgrade: "websocket",
    connection: "Upgrade",
    "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
    "sec-websocket-version": "13",
    ...headers,
  };
  const lines = [`GET ${path} HTTP/1.1`, ...Object.entries(all).map(([k, v]) => `${k}: ${v}`)];
  return exchange(port, `${lines.join("\r\n")}\r\n\r\n`, true);
}

function exchange(port: number, text: string, upgrade: boolean): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let data = Buffer.alloc(0);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      const raw = data.toString("utf8");
      const end = raw.indexOf("\r\n\r\n");
      const head = end < 0 ? raw : raw.slice(0, end);
      const [statusLine, ...headerLines] = head.split("\r\n");
      const out: Record<string, string> = {};
      for (const line of headerLines) {
        const colon = line.indexOf(":");
        if (colon > 0) out[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      let body = end < 0 ? "" : raw.slice(end + 4);
      if (/chunked/i.test(out["transfer-encoding"] ?? "")) body = unchunk(body);
      let json: any;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      resolve({ status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? "")?.[1] ?? 0), headers: out, body, json });
    };
    socket.on("data", (chunk) => {
      data = Buffer.concat([data, chunk]);
      // A taken upgrade never ends by itself: its head is the whole answer here.
      if (upgrade && data.includes("\r\n\r\n") && data.toString("latin1").startsWith("HTTP/1.1 101")) {
        socket.destroy();
        finish();
      }
    });
    socket.on("end", finish);
    socket.on("close", finish);
    socket.on("error", reject);
    socket.write(text);
  });
}

function unchunk(body: string): string {
  let out = "";
  let rest = body;
  for (;;) {
    const eol = rest.indexOf("\r\n");
    if (eol < 0) return out;
    const size = parseInt(rest.slice(0, eol), 16);
    if (!size) return out;
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 2 + size + 2);
  }
}
