/**
 * Encoding `requests` and `approvals` rows, the same for every store: JSON as text, booleans as
 * 0/1 (SQLite) or BOOLEAN (PostgreSQL, read back as true/false), timestamps as integers
 * (PostgreSQL BIGINT comes back as a string, hence Number()).
 */
import type { ApprovalRow, RequestPatch, RequestRow } from "../rows.js";

const PATCHABLE = new Set(["status", "choice", "resolved_by", "reason", "note", "answer", "resolved_at"]);

export function requestFromColumns(r: Record<string, unknown>): RequestRow {
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    id: r.id as string,
    session_id: r.session_id as string,
    turn_id: r.turn_id as string,
    trace_id: r.trace_id as string,
    kind: r.kind as string,
    call_id: (r.call_id as string | null) ?? null,
    tool: (r.tool as string | null) ?? null,
    ordinal: Number(r.ordinal),
    payload: JSON.parse(r.payload as string),
    rerunnable: r.rerunnable === true || r.rerunnable === 1,
    status: r.status as RequestRow["status"],
    choice: (r.choice as string | null) ?? null,
    resolved_by: (r.resolved_by as string | null) ?? null,
    reason: (r.reason as string | null) ?? null,
    note: (r.note as string | null) ?? null,
    answer: r.answer ? JSON.parse(r.answer as string) : null,
    created_at: Number(r.created_at),
    resolved_at: num(r.resolved_at),
  };
}

/** The columns of a new row; `bool` renders a boolean for the backend. */
export function requestToColumns(row: RequestRow, bool: (b: boolean) => unknown): Record<string, unknown> {
  // The deadline lives in the payload (what the wire shows); its column is what the sweep looks up.
  const expires = (row.payload as { expires_at?: unknown }).expires_at;
  return {
    ...row,
    payload: JSON.stringify(row.payload),
    answer: row.answer ? JSON.stringify(row.answer) : null,
    rerunnable: bool(row.rerunnable),
    expires_at: typeof expires === "number" ? expires : null,
  };
}

export function requestPatchToColumns(patch: RequestPatch): Record<string, unknown> {
  const cols: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined || !PATCHABLE.has(k)) continue;
    cols[k] = k === "answer" ? (v === null ? null : JSON.stringify(v)) : v;
  }
  return cols;
}

export function approvalFromColumns(r: Record<string, unknown>): ApprovalRow {
  return { principal: r.principal as string, tool: r.tool as string, by: r.by as string, created_at: Number(r.created_at) };
}

export const REQUEST_COLUMNS = [
  "id", "session_id", "turn_id", "trace_id", "kind", "call_id", "tool", "ordinal", "payload", "rerunnable",
  "status", "choice", "resolved_by", "reason", "note", "answer", "created_at", "resolved_at", "expires_at",
] as const;
