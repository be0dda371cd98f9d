/**
 * A turn feed (turn-feed.ts) as a web ReadableStream of whatever a protocol translates its items
 * into, pulled as the client reads: the response a UI protocol endpoint returns. Ends when the
 * feed does; a client that goes away (or a stream that stops being read past the hard limit)
 * aborts the feed, and `cleanup` — the tap's detach — runs once either way.
 *
 * The session's turn goes on when the client leaves: that is what a resume comes back to.
 */
import type { AppContext, HttpApi } from "../http/context.js";
import { boundToStream, type FrameTap } from "../http/frame-tap.js";
import { turnFeed, type FeedEnd, type FeedItem, type TurnFeedSource } from "./turn-feed.js";

export interface FeedTranslator<T> {
  /** What the stream opens with. */
  open(): T[];
  item(item: FeedItem): T[];
  /** What closes it, given how the feed ended. */
  close(how: FeedEnd): T[];
}

export function feedStream<T>(
  c: AppContext,
  api: HttpApi,
  src: Omit<TurnFeedSource, "signal">,
  translator: FeedTranslator<T>,
  cleanup: () => Promise<void>,
  /** What to send after `api.config.sse_keepalive_ms` without anything (proxies close idle connections). */
  keepAlive?: () => T,
): ReadableStream<T> {
  const abort = new AbortController();
  const outgoing = c.env.outgoing;
  const onClose = () => abort.abort(new Error("client disconnected"));
  outgoing.once("close", onClose);
  api.metrics?.connectionOpened("sse");
  if (src.tap) bound(src.tap, c, api, src.sessionId);
  let cleaned = false;
  const finish = async () => {
    if (cleaned) return;
    cleaned = true;
    outgoing.off("close", onClose);
    api.metrics?.connectionClosed("sse");
    src.tap?.close();
    await cleanup().catch(() => undefined);
  };
  const gen = (async function* (): AsyncGenerator<T> {
    try {
      yield* translator.open();
      const feed = turnFeed({ ...src, signal: abort.signal });
      for (;;) {
        const r = await feed.next();
        if (r.done) {
          yield* translator.close(r.value);
          return;
        }
        yield* translator.item(r.value);
      }
    } finally {
      await finish();
    }
  })();
  // The next item, kept across pulls: a keep-alive may answer a pull while it is still coming.
  let next: Promise<IteratorResult<T>> | null = null;
  const nextOrIdle = async (): Promise<IteratorResult<T> | "idle"> => {
    next ??= gen.next();
    if (!keepAlive) return next;
    let timer: { cancel(): void } | undefined;
    const idle = new Promise<"idle">((resolve) => (timer = api.clock.setTimeout(() => resolve("idle"), api.config.sse_keepalive_ms)));
    try {
      return await Promise.race([next, idle]);
    } finally {
      timer?.cancel();
    }
  };
  return new ReadableStream<T>({
    async pull(controller) {
      try {
        const r = await nextOrIdle();
        if (r === "idle") {
          controller.enqueue(keepAlive!());
          return;
        }
        next = null;
        if (r.done) controller.close();
        else controller.enqueue(r.value);
      } catch (err) {
        api.logger.warn({ err, session_id: src.sessionId, turn_id: src.turnId }, "UI protocol stream failed");
        controller.error(err);
        await finish();
      }
    },
    async cancel() {
      abort.abort(new Error("stream cancelled"));
      await gen.return(undefined).catch(() => undefined);
      await finish();
    },
  });
}

/** A reader that stops reading while the turn streams on: the tap lets go over the hard limit, the stream ends (a resume picks up). */
function bound(tap: FrameTap, c: AppContext, api: HttpApi, sessionId: string): void {
  const outgoing = c.env.outgoing;
  boundToStream(
    tap,
    {
      blocked: () => outgoing.writableNeedDrain,
      cutAfter: (ms) => {
        const timer = setTimeout(() => outgoing.destroy(), ms);
        outgoing.once("close", () => clearTimeout(timer));
      },
    },
    api.flow.hardBytes,
    () => api.logger.warn({ session_id: sessionId }, "slow UI stream reader over the hard limit: ending the stream"),
  );
}
