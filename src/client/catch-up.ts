/**
 * Catch-up of one subscribed session: `session.resume` (re-attaches this connection as a viewer,
 * so live frames flow again) then `session.events.since` from the watermark. Live frames that
 * arrive meanwhile are buffered by the stream and applied after the `since` events, each at most
 * once. A `session.resync` notice (the server skipped deltas for this slow connection) runs the
 * same catch-up without the resume: the connection is still a viewer.
 *
 * Error classes, decided here once:
 * - 4007 / 4010 (gone, closed): the subscription is dropped for good.
 * - 4001 (not live here): terminal for this session's subscription until the app re-binds it
 *   (`resumeSession`); the stream is *suspended* and reconnects skip it. Siblings are untouched.
 * - timeouts, storage/capacity errors (retryable RpcErrors): transient, retried with backoff on the
 *   same connection; a lost connection (ConnectionError) ends the attempt: the reconnect retries.
 */
import { ErrorCode, Method, type MessageSnapshot, type MethodMap, type SinceResult, type Snapshot } from "../protocol/index.js";
import { ConnectionError, RpcError, TimeoutError } from "./errors.js";
import type { SessionStream } from "./session-stream.js";

export type Caller = <M extends keyof MethodMap>(method: M, params: MethodMap[M]["params"]) => Promise<MethodMap[M]["result"]>;

export interface CatchUpDeps {
  call: Caller;
  /** The id resolved to a live tip (`resolved_from`): the stream now follows that id. */
  rekey(stream: SessionStream, newId: string): void;
  /** The session is gone for good: forget the stream. */
  drop(stream: SessionStream): void;
  /** False once the connection this catch-up runs on is gone (stop retrying). */
  isCurrent(): boolean;
  /** Waits before retry `attempt` (1-based); resolves early when the client closes. */
  pause(attempt: number): Promise<void>;
}

export type CatchUpMode =
  /** After a reconnect: a stream that never had a watermark replays from the start (nothing lost). */
  | "reconnect"
  /** An explicit resumeSession(): without a watermark, the Snapshot itself is the starting state. */
  | "resume"
  /** A `session.resync` notice: still a viewer, only `since` is needed. */
  | "resync";

/** Session ended for good: drop the subscription instead of failing every reconnect. */
const GONE_CODES: ReadonlySet<number> = new Set([ErrorCode.NotFound, ErrorCode.Closed]);

/**
 * Transient: worth retrying on the same connection. 4001 is `retryable` on the wire (resume,
 * then retry), but for a subscription it is terminal until the app re-binds the session: retrying
 * it here would poll a suspended session forever (and hold a reconnect's `connected` back).
 */
export function isTransient(err: unknown): boolean {
  if (err instanceof TimeoutError) return true;
  return err instanceof RpcError && err.retryable && err.code !== ErrorCode.NotLive;
}

/** Resolves with the resume Snapshot, or with the error when the catch-up failed (already reported). */
export async function catchUp(
  stream: SessionStream,
  deps: CatchUpDeps,
  mode: CatchUpMode,
  afterSeq?: number,
): Promise<{ snapshot?: Snapshot; error?: unknown }> {
  for (let attempt = 1; ; attempt++) {
    const outcome = await catchUpOnce(stream, deps, mode, afterSeq);
    if (outcome.error === undefined || !isTransient(outcome.error) || !deps.isCurrent()) {
      if (outcome.error !== undefined && isTransient(outcome.error)) stream.gap("catch-up failed", asError(outcome.error));
      return outcome;
    }
    await deps.pause(attempt);
    if (!deps.isCurrent()) return outcome;
  }
}

async function catchUpOnce(
  stream: SessionStream,
  deps: CatchUpDeps,
  mode: CatchUpMode,
  afterSeq?: number,
): Promise<{ snapshot?: Snapshot; error?: unknown }> {
  const token = stream.beginCatchUp();
  const asked = stream.sessionId;
  try {
    let snapshot: Snapshot | undefined;
    if (mode !== "resync") {
      const from = stream.watermark ?? afterSeq;
      snapshot = await deps.call(
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
    }
    const watermark = stream.watermark ?? 0;
    const since: SinceResult =
      snapshot && watermark >= snapshot.latest_seq
        ? { events: [], latest_seq: snapshot.latest_seq, truncated: false, epoch: snapshot.epoch, snapshots: [] }
        : // Durable frames + snapshots only: missed deltas would re-send text that every
          // message.complete and snapshot in the answer already holds (see include_transient).
          await deps.call(Method.EventsSince, { session_id: stream.sessionId, after_seq: watermark, include_transient: false });
    stream.finishCatchUp(token, since);
    stream.resumed();
    if (since.truncated) stream.gap("truncated: durable events after the watermark are no longer retained");
    return snapshot ? { snapshot } : {};
  } catch (err) {
    stream.abortCatchUp(token);
    if (err instanceof RpcError && GONE_CODES.has(err.code)) {
      deps.drop(stream);
      stream.dropped(err);
    } else if (err instanceof RpcError && err.code === ErrorCode.NotLive) {
      stream.suspend(err);
    } else if (!(err instanceof ConnectionError) && !isTransient(err)) {
      // A lost connection is not a gap: the next reconnect catches up from the same watermark.
      stream.gap("catch-up failed", asError(err));
    }
    return { error: err };
  }
}

/**
 * After the gateway restarted (a new epoch): a message that was streaming under the old epoch and
 * got no `message.complete` in the catch-up is looked up in the transcript, and its stored text
 * (as last checkpointed) is handed to the app as a snapshot. Normally the new process already
 * completed it as `interrupted` (a durable frame the catch-up brought), so nothing is asked for.
 */
export async function refreshStaleMessages(stream: SessionStream, call: Caller, epoch: string): Promise<void> {
  const stale = stream.streamingBefore(epoch);
  if (stale.length === 0 || stream.suspendedBy) return;
  const wanted = new Set(stale);
  let after: string | undefined;
  try {
    for (let page = 0; page < 100 && wanted.size > 0; page++) {
      const res = await call(Method.SessionMessages, {
        session_id: stream.sessionId,
        limit: 500,
        ...(after === undefined ? {} : { after_message_id: after }),
      });
      for (const m of res.messages) {
        if (!wanted.has(m.message_id)) continue;
        wanted.delete(m.message_id);
        const snap: MessageSnapshot = {
          message_id: m.message_id,
          role: "assistant",
          text: m.content,
          reasoning: "",
          as_of_seq: stream.watermark ?? 0,
        };
        stream.applyStoredText(snap, m.status !== "streaming");
      }
      if (!res.next_cursor) break;
      after = res.next_cursor;
    }
  } catch {
    // Best effort: the next message.complete (or a later catch-up) carries the text anyway.
  }
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
