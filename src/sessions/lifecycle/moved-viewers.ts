/**
 * The viewers a runtime had here when this process found its lease taken (a beat that judged it
 * lost, a write the fence refused, a resume elsewhere): dropping the runtime quietly left them
 * attached to nothing, silent while the new owner streams on. Each is told with the frame the
 * protocol already has for "frames of this session went past you": `session.resync
 * { session_id, from_seq }` (the SDK catches up through `session.events.since`, each seq once).
 * Scale-out (a bus): first the viewer follows the new owner's frames through the bus, so the
 * catch-up is served here from the store and the bus and live frames go on. Without a bus the
 * catch-up answers 4001 (not live here): the SDK suspends the session and the app resumes it.
 */
import { encodeEventNotification, EventType, type Frame, type SessionResyncPayload } from "../../protocol/index.js";
import type { Viewer } from "../core/viewer.js";

/** Makes `viewer` follow `sessionId` from another node after `afterSeq` (scale-out only). */
export type FollowElsewhere = (sessionId: string, afterSeq: number, viewer: Viewer) => void;

export function tellMovedViewers(
  sessionId: string,
  viewers: readonly Viewer[],
  fromSeq: number,
  frame: { epoch: string; ts: number },
  follow: FollowElsewhere | null,
): void {
  if (viewers.length === 0) return;
  const notice: Frame<SessionResyncPayload> = {
    type: EventType.SessionResync,
    session_id: "",
    epoch: frame.epoch,
    ts: frame.ts,
    payload: { session_id: sessionId, from_seq: fromSeq },
  };
  const wire = encodeEventNotification(notice);
  for (const viewer of viewers) {
    follow?.(sessionId, fromSeq, viewer);
    viewer.send(notice, wire);
  }
}
