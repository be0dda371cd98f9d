/**
 * Catch-up of one subscribed session: `session.resume` (re-attaches this connection as a viewer,
 * so live frames flow again) then `session.events.since` from the watermark. Live frames that
 * arrive meanwhile are buffered by the stream and applied after the `since` events, each at most
 * once.
 */
import { ErrorCode, Method, type MethodMap, type SinceResult, type Snapshot } from "../protocol/index.js";
import { ConnectionError, RpcError } from "./errors.js";
import type { SessionStream } from "./session-stream.js";

export type Caller = <M extends keyof MethodMap>(method: M, params: MethodMap[M]["params"]) => Promise<MethodMap[M]["result"]>;

export interface CatchUpDeps {
  call: Caller;
  /** The id resolved to a live tip (`resolved_from`): the stream now follows that id. */
  rekey(stream: SessionStream, newId: string): void;
  /** The session is gone for good: forget the stream. */
  drop(stream: SessionStream): void;
}

export type CatchUpMode =
  /** After a reconnect: a stream that never had a watermark replays from the start (nothing lost). */
  | "reconnect"
  /** An explicit resumeSession(): without a watermark, the Snapshot itself is the starting state. */
  | "resume";

/** Session ended for good: drop the subscription instead of failing every reconnect. */
const GONE_CODES: ReadonlySet<number> = new Set([ErrorCode.NotFound, ErrorCode.Closed]);

/** Resolves with the resume Snapshot, or undefined when the catch-up failed (already reported). */
export async function catchUp(
  stream: SessionStream,
  deps: CatchUpDeps,
  mode: CatchUpMode,
  afterSeq?: number,
): Promise<{ snapshot?: Snapshot; error?: unknown }> {
  const token = stream.beginCatchUp();
  const asked = stream.sessionId;
  try {
    const from = stream.watermark ?? afterSeq;
    const snapshot = await deps.call(
      Method.SessionResume,
      from === undefined ? { session_id: asked } : { session_id: asked, after_seq: from },
    );
    if (snapshot.session_id !== asked) {
      // Seqs are per session: the ancestor's watermark means nothing for the tip, whose
      // Snapshot is the starting state.
      deps.rekey(stream, snapshot.session_id);
      stream.watermark = snapshot.latest_seq;
    }
    if (stream.watermark === undefined) stream.watermark = afterSeq ?? (mode === "resume" ? snapshot.latest_seq : 0);
    const watermark = stream.watermark;
    const since: SinceResult =
      watermark >= snapshot.latest_seq
        ? { events: [], latest_seq: snapshot.latest_seq, truncated: false, epoch: snapshot.epoch, snapshots: [] }
        : await deps.call(Method.EventsSince, { session_id: stream.sessionId, after_seq: watermark });
    stream.finishCatchUp(token, since);
    if (since.truncated) stream.gap("truncated: durable events after the watermark are no longer retained");
    return { snapshot };
  } catch (err) {
    if (err instanceof RpcError && GONE_CODES.has(err.code)) {
      deps.drop(stream);
      stream.dropped(err);
    } else {
      stream.abortCatchUp(token);
      // A lost connection is not a gap: the next reconnect catches up from the same watermark.
      if (!(err instanceof ConnectionError)) stream.gap("catch-up failed", err instanceof Error ? err : new Error(String(err)));
    }
    return { error: err };
  }
}
