/**
 * An SSE reader over a raw node:http request whose reading can be paused, for flow-control tests:
 * a paused response stops reading its socket, so the kernel buffers fill and the gateway sees a
 * client that does not keep up (fetch's body stream gives no such control).
 *
 *   const sse = await openPausableSse(`${url}/api/sessions/${id}/events?after_seq=0`);
 *   await sse.waitFor((evs) => evs.length > 0);
 *   sse.pause(); … sse.resume();
 */
import http from "node:http";
import { sseParser, type SseEvent } from "./sse-client.js";

export interface PausableSse {
  status: number;
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

export function openPausableSse(url: string, headers: Record<string, string> = {}): Promise<PausableSse> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers }, (res) => {
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
  });
}
