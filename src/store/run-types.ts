/**
 * The `/v1/runs` API's rows: one run (a turn of a session, addressed by the run id) and the
 * conversation keys (`X-Session-Key`) that name a session. A run's progress is not stored here:
 * it is derived from the session's event log; the row keeps what addresses it and, once it is
 * over, its final object.
 */

export interface RunRow {
  id: string;
  principal: string;
  session_id: string;
  turn_id: string;
  /** The session's latest seq before the turn was submitted: the run's frames all come after. */
  after_seq: number;
  model: string;
  /** The `X-Session-Key` the run was addressed by, if any. */
  session_key: string | null;
  /** queued | running | waiting | completed | failed | cancelled | interrupted (as last seen). */
  status: string;
  /** `POST /v1/runs/{id}/stop` was asked: an interrupted turn then reads `cancelled`. */
  stop_requested: boolean;
  /** JSON of the final run object, once terminal. */
  result: string | null;
  created_at: number;
  updated_at: number;
}

/** `session_id`/`after_seq` move when the run's queued turn was handed to a continuation (compression). */
export type RunPatch = Partial<Pick<RunRow, "session_id" | "after_seq" | "status" | "stop_requested" | "result" | "updated_at">>;

/** Runs and session keys. SQLite and PostgreSQL implement it (migration 11). */
export interface RunStore {
  insertRun(row: RunRow): Promise<void>;
  getRun(id: string): Promise<RunRow | null>;
  updateRun(id: string, patch: RunPatch): Promise<void>;
  /** The session a principal's key names, null when the key is new. */
  sessionOfKey(principal: string, key: string): Promise<string | null>;
  /**
   * Binds the key to `sessionId` unless it is bound already (two first runs racing, here or on
   * another node): returns the session the key names now — the first binding wins.
   */
  bindKey(principal: string, key: string, sessionId: string, at: number): Promise<string>;
}

export function runFromColumns(r: Record<string, unknown>): RunRow {
  return {
    id: r.id as string,
    principal: r.principal as string,
    session_id: r.session_id as string,
    turn_id: r.turn_id as string,
    after_seq: Number(r.after_seq),
    model: r.model as string,
    session_key: (r.session_key as string | null) ?? null,
    status: r.status as string,
    stop_requested: r.stop_requested === true || r.stop_requested === 1,
    result: (r.result as string | null) ?? null,
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
  };
}

export const RUN_COLUMNS = [
  "id", "principal", "session_id", "turn_id", "after_seq", "model", "session_key",
  "status", "stop_requested", "result", "created_at", "updated_at",
] as const;

/** The columns of a patch, booleans as the backend keeps them; only known columns (they go into SQL). */
export function runPatchColumns(patch: RunPatch, bool: (v: boolean) => unknown): Record<string, unknown> {
  const cols: Record<string, unknown> = {};
  if (patch.session_id !== undefined) cols.session_id = patch.session_id;
  if (patch.after_seq !== undefined) cols.after_seq = patch.after_seq;
  if (patch.status !== undefined) cols.status = patch.status;
  if (patch.stop_requested !== undefined) cols.stop_requested = bool(patch.stop_requested);
  if (patch.result !== undefined) cols.result = patch.result;
  if (patch.updated_at !== undefined) cols.updated_at = patch.updated_at;
  return cols;
}
