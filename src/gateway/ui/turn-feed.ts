/**
 * The frames of one turn, in seq order, for a front-end protocol to translate: what the log holds
 * already (a resume, a continuation after an answer), then what a FrameTap receives live — each
 * frame once, however the two overlap. Every UI protocol endpoint reads its turn through this, so
 * none of them has a loop, a store or a resume logic of its own.
 *
 *   for await (const item of turnFeed({ sessions, caller, sessionId, turnId, afterSeq, tap, catchUp: true, stopAtAwaiting: true, signal })) …
 *
 * The catch-up comes as one item: its frames (deltas included while the log's ring still has
 * them) and the text so far of the turn's messages still streaming. A translator takes a message's
 * text from its `message.complete` or its snapshot there, not from the deltas, which the ring may
 * have dropped (or a restart lost): the replayed text is the stored text, whole and once.
 */
import { EventType, type Frame, type MessageSnapshot } from "../../protocol/index.js";
import type { Caller, SessionManager } from "../../sessions/index.js";
import type { FrameTap } from "../http/frame-tap.js";

export type FeedItem =
  /** The turn's frames already in the log after `afterSeq`, and its streaming messages' text so far. */
  | { kind: "catchup"; frames: Frame[]; snapshots: MessageSnapshot[] }
  | { kind: "frame"; frame: Frame };

/** How the feed ended: the turn completed, parked on an open request, its session closed, or the reader left. */
export type FeedEnd = "complete" | "awaiting" | "closed" | "gone";

export interface TurnFeedSource {
  sessions: SessionManager;
  caller: Caller;
  sessionId: string;
  turnId: string;
  /** Frames after this seq are the feed's: the seq before the turn's start, or where a continuation picks up. */
  afterSeq: number;
  /** Attached to the session before the log is read (frames in both are deduplicated by seq); null: the turn is over, the log is all. */
  tap: FrameTap | null;
  /** Read the log first (a resume, a continuation); false: the tap was attached before the turn began, and saw all of it. */
  catchUp: boolean;
  /** End at the turn's `turn.awaiting` (a stream that ends where the client must answer) instead of following it on. */
  stopAtAwaiting: boolean;
  signal: AbortSignal;
}

export async function* turnFeed(src: TurnFeedSource): AsyncGenerator<FeedItem, FeedEnd> {
  const { sessions, caller, sessionId, turnId, tap, signal } = src;
  let last = src.afterSeq;
  const ends = (f: Frame): FeedEnd | null => {
    if (f.type === EventType.SessionClosed) return "closed";
    if (f.turn_id !== turnId) return null;
    if (f.type === EventType.TurnComplete) return "complete";
    if (f.type === EventType.TurnAwaiting && src.stopAtAwaiting) return "awaiting";
    return null;
  };
  const ours = (f: Frame) => f.turn_id === turnId || f.type === EventType.SessionClosed;

  if (src.catchUp) {
    // The log of a session live here or on another node (`since`: ring and snapshots included),
    // else the store's durable frames.
    const since = tap ? await sessions.since(caller, sessionId, last) : await sessions.replay(caller, sessionId, last);
    const frames: Frame[] = [];
    let end: FeedEnd | null = null;
    for (const f of since.events) {
      if ((f.seq ?? 0) <= last || !ours(f)) continue;
      // A park the turn has moved on from (its answers came) is history: only a last one ends the feed.
      if (frames.at(-1)?.type === EventType.TurnAwaiting) frames.pop();
      frames.push(f);
      end = f.type === EventType.TurnAwaiting ? null : ends(f);
      if (end) break;
    }
    if (!end && frames.at(-1)?.type === EventType.TurnAwaiting) end = ends(frames.at(-1)!);
    last = Math.max(last, since.latest_seq, frames.at(-1)?.seq ?? 0);
    yield { kind: "catchup", frames, snapshots: end ? [] : since.snapshots.filter((s) => s.turn_id === turnId) };
    if (end) return end;
  }
  if (!tap) return "gone";
  for (;;) {
    const f = await tap.next(signal);
    if (!f) return "gone";
    if ((f.seq ?? 0) <= last) continue;
    last = f.seq ?? last;
    if (!ours(f)) continue;
    yield { kind: "frame", frame: f };
    const end = ends(f);
    if (end) return end;
  }
}
