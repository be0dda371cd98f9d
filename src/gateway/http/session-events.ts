/**
 * The SSE stream of one session (`GET /api/sessions/{id}/events`): a start (snapshot, or catch-up
 * from a cursor), then live frames from an `SseFlowTap` in seq order, each as `id: <seq>`,
 * `event: <type>`, `data: <Frame JSON>`.
 *
 * When the tap lagged (the client read slower than the session streamed, so deltas were skipped),
 * the loop itself heals the stream once the backlog is down: a `session.resync` event, then the
 * same catch-up a reconnect with Last-Event-ID gets (`since(last)` frames, then `session.catchup`
 * with snapshots). A plain EventSource client thus re-renders without a gap and without any code.
 * `last` only moves forward, so a frame is never written twice, whether it comes from a catch-up
 * or from the tap. Over the hard limit the response ends, and is cut if the end cannot get through.
 *
 * When this node drops the session's runtime because another took its lease, the tap gets the
 * `session.resync` frame every viewer gets (moved-viewers.ts): the loop answers it the same way
 * (resync event, catch-up after `last`, live frames from the new owner through the bus), or ends
 * the stream when the catch-up is refused here (no bus), so the client resumes by reconnecting.
 */
import { EventType, type Frame, type SinceResult, type Snapshot } from "../../protocol/index.js";
import type { Logger } from "../../lib/logger.js";
import type { SseWriter } from "./sse.js";
import type { SseFlowTap } from "./sse-flow.js";
import { OVERFLOW_CUT_MS } from "./frame-tap.js";

/** SSE event names that are not frame types. */
export const SseEvent = {
  Snapshot: "session.snapshot",
  Catchup: "session.catchup",
  /** Same name and data as the WebSocket notice: `{ session_id, from_seq }`. */
  Resync: "session.resync",
} as const;


export interface SessionEventsOptions {
  sessionId: string;
  tap: SseFlowTap;
  /** The cursor of the request; undefined → start with `snapshot`. */
  after: number | undefined;
  snapshot: Snapshot;
  /** `transient: false` leaves out deltas (their text is in the snapshots), see include_transient. */
  since(afterSeq: number, transient: boolean): Promise<SinceResult>;
  logger: Logger;
}

export async function streamSessionEvents(sse: SseWriter, opts: SessionEventsOptions): Promise<void> {
  const { tap, sessionId } = opts;
  tap.bind({
    pendingBytes: () => sse.pendingBytes(),
    blocked: () => sse.blocked(),
    overflow() {
      opts.logger.warn({ session_id: sessionId, backlog: tap.backlogBytes, skipped: tap.skippedFrames }, "slow SSE viewer over the hard limit: ending the stream");
      // The loop may be stuck in a write the client does not read: it ends at its next step, and
      // the connection is cut if that end cannot get through.
      sse.cutAfter(OVERFLOW_CUT_MS);
    },
  });
  sse.onDrain(() => tap.drained());
  const write = (f: Frame) => sse.send(JSON.stringify(f), { id: String(f.seq), event: f.type });
  let last = 0;
  let closed = false;

  /**
   * Every retained frame after `after` (without deltas after a resync: the reader just proved too
   * slow for them, and the snapshots carry their text), then `session.catchup`; moves `last` on.
   */
  const catchUp = async (after: number, transient: boolean) => {
    const since = await opts.since(after, transient);
    for (const f of since.events) {
      if ((f.seq ?? 0) <= last) continue;
      await write(f);
      if (f.type === EventType.SessionClosed) closed = true;
    }
    last = Math.max(last, since.latest_seq);
    const { latest_seq, truncated, epoch, snapshots } = since;
    await sse.send(JSON.stringify({ latest_seq, truncated, epoch, snapshots }), { event: SseEvent.Catchup, id: String(latest_seq) });
  };

  if (opts.after === undefined) {
    last = opts.snapshot.latest_seq;
    await sse.send(JSON.stringify(opts.snapshot), { event: SseEvent.Snapshot, id: String(last) });
  } else {
    await catchUp(opts.after, true);
  }
  /**
   * `session.resync` (no `id:` field: the client's Last-Event-ID stays the last frame it really
   * got), then the catch-up after `last`. False when the catch-up failed: the stream must end.
   */
  const resync = async (fromSeq: number, transient: boolean): Promise<boolean> => {
    await sse.send(JSON.stringify({ session_id: sessionId, from_seq: fromSeq }), { event: SseEvent.Resync });
    try {
      await catchUp(last, transient);
      return true;
    } catch (err) {
      // The session went away meanwhile (ended, moved, not live here without a bus): end the
      // stream; the client's reconnect with Last-Event-ID gets the answer (or the error) from the route.
      opts.logger.info({ err, session_id: sessionId }, "SSE catch-up after a resync failed: ending the stream");
      return false;
    }
  };

  while (!closed) {
    const item = await tap.next(sse.signal);
    if (!item) break;
    // The tap lagged: deltas were skipped, the reader just proved too slow for them.
    if (item.resync !== undefined) {
      if (!(await resync(item.resync, false))) break;
      continue;
    }
    const f = item.frame;
    if (f.type === EventType.SessionResync && f.seq === undefined) {
      // The runtime here was dropped: another node took the session's lease (moved-viewers.ts).
      // With a bus the tap already follows the new owner; the catch-up fills what went past in
      // between (from the store and the bus), and frames go on, each seq once. Without a bus the
      // catch-up fails and the stream ends: the reconnect with Last-Event-ID resumes it.
      if (!(await resync((f.payload as { from_seq: number }).from_seq, true))) break;
      continue;
    }
    if ((f.seq ?? 0) <= last) continue;
    last = f.seq!;
    await write(f);
    if (f.type === EventType.SessionClosed) closed = true;
  }
}
