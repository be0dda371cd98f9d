/**
 * An SSE reader over a raw node:http request whose reading can be paused, for flow-control tests:
 * a paused response stops reading its socket, so the kernel buffers fill and the gateway sees a
 * client that does not keep up (fetch's body stream gives no such control).
 *
 *   const sse = await openPausableSse(`${url}/api/sessions/${id}/events?after_seq=0`);
 *   await sse.waitFor((evs) => evs.length > 0);
 *   sse.pause(); … sse.resume();
 */
import { readFileSync } from "node:fs";
import http from "node:http";
import { sseParser, type SseEvent } from "./sse-client.js";

export interface PausableSse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Complete events so far (a block ended by a blank line), in order. */
  events: SseEvent[];
  /** True once the response closed: ended by the server, or cut. */
  readonly closed: boolean;
  pause(): void;
  resume(): void;
  waitFor(pred: (events: SseEvent[]) => boolean, timeoutMs?: number): Promise<void>;
  /** Resolves when the response closed (rejects after `timeoutMs`). */
  waitClosed(timeoutMs?: number): Promise<void>;
  close(): void;
}

/**
 * What loopback TCP can absorb from a paused reader before the gateway sees any backlog: the
 * sender's buffer grows up to tcp_wmem's max, the receiver's stays near its default while nobody
 * reads. A stream must be larger than this for the gateway to notice a slow client at all.
 */
export function kernelSlackBytes(): number {
  try {
    const field = (name: string, i: number) => Number(readFileSync(`/proc/sys/net/ipv4/${name}`, "utf8").trim().split(/\s+/)[i]);
    const slack = field("tcp_wmem", 2) + 4 * field("tcp_rmem", 1);
    return Number.isFinite(slack) ? slack : 8 * 1024 * 1024;
  } catch {
    return 8 * 1024 * 1024;
  }
}

/** A GET by default; `body` makes it a POST of that JSON (an OpenAI streaming request). */
export function openPausableSse(url: string, headers: Record<string, string> = {}, body?: unknown): Promise<PausableSse> {
  return new Promise((resolve, reject) => {
    const method = body === undefined ? "GET" : "POST";
    const allHeaders = body === undefined ? headers : { "content-type": "application/json", ...headers };
    const req = http.request(url, { method, headers: allHeaders }, (res) => {
      const events: SseEvent[] = [];
      const waiters = new Set<() => void>();
      const notify = () => waiters.forEach((w) => w());
      let closed = false;
      const feed = sseParser((ev) => events.push(ev));
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        feed(chunk);
        notify();
      });
      const onClose = () => {
        closed = true;
        notify();
      };
      res.on("close", onClose);
      res.on("error", () => undefined); // a cut connection: `closed` says it
      const wait = (pred: () => boolean, timeoutMs: number, what: string) =>
        new Promise<void>((ok, fail) => {
          const check = () => {
            if (pred()) return finish(), ok();
            if (closed && what !== "close") return finish(), fail(new Error(`stream closed before ${what} (${events.length} events)`));
          };
          const timer = setTimeout(() => (finish(), fail(new Error(`timed out waiting for ${what} (${events.length} events)`))), timeoutMs);
          const finish = () => {
            clearTimeout(timer);
            waiters.delete(check);
          };
          waiters.add(check);
          check();
        });
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        events,
        get closed() {
          return closed;
        },
        pause: () => void res.pause(),
        resume: () => void res.resume(),
        waitFor: (pred, timeoutMs = 10_000) => wait(() => pred(events), timeoutMs, "the condition"),
        waitClosed: (timeoutMs = 10_000) => wait(() => closed, timeoutMs, "close"),
        close: () => void req.destroy(),
      });
    });
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
