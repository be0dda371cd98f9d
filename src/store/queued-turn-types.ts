/**
 * Prompts waiting in a session's turn queue (`queued_turns`, migration 18). A prompt that queues
 * behind a running turn is stored before its submit is answered, and leaves the table in the
 * transaction that writes its `turn.start` (or when it is dropped): after a crash the rows are
 * exactly the prompts accepted and never started, and the recovery sweep opens their sessions to
 * run them in order.
 */

export interface QueuedTurnRow {
  turn_id: string;
  session_id: string;
  /** Order within the session's queue (ascending). */
  position: number;
  trace_id: string;
  text: string;
  /** The submit's request id (its idempotency key in the session), if any. */
  request_id: string | null;
  /** JSON of what else the queued turn carries (`traceParent`, `noInput`, `inputMessageId`). */
  extra: string | null;
  created_at: number;
}

/** Queued prompts. SQLite and PostgreSQL implement it (migration 18). */
export interface QueuedTurnStore {
  /** The session's queued prompts, in order. */
  queuedTurns(sessionId: string): Promise<QueuedTurnRow[]>;
  /** Sessions with at least one queued prompt, at most `limit`. */
  queuedSessions(limit: number): Promise<string[]>;
}

export const QUEUED_TURN_COLUMNS = ["turn_id", "session_id", "position", "trace_id", "text", "request_id", "extra", "created_at"] as const;

export function queuedTurnFromColumns(r: Record<string, unknown>): QueuedTurnRow {
  return {
    turn_id: r.turn_id as string,
    session_id: r.session_id as string,
    position: Number(r.position),
    trace_id: r.trace_id as string,
    text: r.text as string,
    request_id: (r.request_id as string | null) ?? null,
    extra: (r.extra as string | null) ?? null,
    created_at: Number(r.created_at),
  };
}
