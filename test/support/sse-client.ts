/**
 * A raw SSE reader over a real HTTP connection, for tests that need to see exactly what goes on the
 * wire (ids, event names, comments) and to cut the connection mid-stream.
 *
 *   const sse = await openSse(`${url}/api/sessions/${id}/events?after_seq=0`);
 *   await sse.waitFor((evs) => evs.some((e) => e.event === "turn.complete"));
 *   sse.close();   // drops the TCP connection
 */
import { createParser } from "eventsource-parser";

export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
}

export interface SseConnection {
  status: number;
  headers: Headers;
  events: SseEvent[];
  /** Comment lines (`: keep-alive`), without the colon. */
  comments: string[];
  /** Resolves when the server ended the stream. */
  ended: Promise<void>;
  waitFor(pred: (events: SseEvent[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): void;
}

/** Feeds raw SSE text; calls back per complete event (a block with data) and per comment line. */
export function sseParser(onEvent: (ev: SseEvent) => void, onComment: (text: string) => void = () => undefined): (chunk: string) => void {
  const parser = createParser({
    onEvent(m) {
      const ev: SseEvent = { data: m.data };
      if (m.id !== undefined) ev.id = m.id;
      if (m.event !== undefined) ev.event = m.event;
      onEvent(ev);
    },
    onComment: (c) => onComment(c.trim()),
  });
  return (chunk) => parser.feed(chunk);
}

export async function openSse(url: string, init: RequestInit = {}): Promise<SseConnection> {
  const abort = new AbortController();
  const res = await fetch(url, { ...init, signal: abort.signal });
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  const notify = () => waiters.forEach((w) => w());
  let finished = false;
  const ended = (async () => {
    if (!res.body) return;
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    const feed = sseParser(
      (ev) => (events.push(ev), notify()),
      (c) => (comments.push(c), notify()),
    );
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        feed(value);
      }
    } catch {
      // aborted by close()
    } finally {
      finished = true;
      notify();
    }
  })();
  return {
    status: res.status,
    headers: res.headers,
    events,
    comments,
    ended,
    async waitFor(pred, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!pred(events)) {
        if (finished) throw new Error(`stream ended before the condition held (${events.length} events)`);
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`timed out waiting on SSE (${events.length} events)`);
        await new Promise<void>((resolve) => {
          const t = setTimeout(done, Math.min(left, 200));
          function done() {
            clearTimeout(t);
            waiters.delete(done);
            resolve();
          }
          waiters.add(done);
        });
      }
    },
    close() {
      abort.abort();
    },
  };
}

/** Polls `fn` until it returns a truthy value (for state that changes server-side, e.g. after a drop). */
export async function eventually<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error("condition never held");
    await new Promise((r) => setTimeout(r, 20));
  }
}
