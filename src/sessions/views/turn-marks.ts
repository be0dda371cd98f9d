/**
 * Where a turn starts in its session's log, and how it ended: what a stream that replays one turn
 * (the AI SDK's resume, an AG-UI reconnect) needs to know before it reads the frames. Read back
 * from the end of the durable log a page at a time, only as far as the turn's `turn.start` — the
 * turns a client asks about are a session's latest, so that is one page, not the whole log.
 */
import { EventType, type TurnCompletePayload } from "../../protocol/index.js";
import type { Store } from "../../store/types.js";
import { storage } from "../core/session-access.js";

/** One turn of a session, as its durable frames place it. */
export interface TurnMark {
  turn_id: string;
  trace_id: string | null;
  /** The seq just before its `turn.start`: the turn's frames are those after it. */
  after_seq: number;
  /** Its `turn.complete`, once it ended. */
  complete?: TurnCompletePayload;
  /** It waits for an answer (`turn.awaiting` after its last `request.resolved`). */
  awaiting: boolean;
}

/** Events read per page, back from the end. */
const PAGE = 200;

/** Turn `turnId` of the session (its latest when absent); null when there is none. */
export async function findTurn(store: Store, sessionId: string, turnId?: string): Promise<TurnMark | null> {
  let before = Number.MAX_SAFE_INTEGER;
  // Read backwards: what the turn did last comes first.
  let complete: TurnCompletePayload | undefined;
  let awaiting: boolean | undefined;
  for (;;) {
    const rows = await storage(() => store.readEventsBefore(sessionId, before, PAGE));
    for (const r of rows) {
      if (r.turn_id === null || (turnId !== undefined && r.turn_id !== turnId)) continue;
      // The latest turn is the one of the latest turn frame; frames of earlier turns are skipped after it.
      turnId ??= r.turn_id;
      if (r.type === EventType.TurnComplete) complete ??= JSON.parse(r.payload) as TurnCompletePayload;
      else if (r.type === EventType.TurnAwaiting) awaiting ??= true;
      else if (r.type === EventType.RequestResolved || r.type === EventType.ToolStart) awaiting ??= false;
      else if (r.type === EventType.TurnStart) {
        return { turn_id: turnId, trace_id: r.trace_id, after_seq: r.seq - 1, ...(complete ? { complete } : {}), awaiting: !complete && awaiting === true };
      }
    }
    if (rows.length < PAGE) return null;
    before = rows.at(-1)!.seq;
  }
}
