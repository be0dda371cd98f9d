/** Mapping between SQLite columns (JSON as text) and store rows. */
import type { MessageRow, SessionPatch, SessionRow } from "../types.js";

const JSON_SESSION_COLUMNS = new Set(["model_config", "flags", "todo", "active_turn"]);

export function sessionToColumns(row: SessionRow): Record<string, unknown> {
  return {
    ...row,
    model_config: JSON.stringify(row.model_config),
    flags: JSON.stringify(row.flags),
    todo: JSON.stringify(row.todo),
    active_turn: row.active_turn ? JSON.stringify(row.active_turn) : null,
  };
}

export function sessionPatchToColumns(patch: SessionPatch): Record<string, unknown> {
  const cols: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    cols[key] = JSON_SESSION_COLUMNS.has(key) && value !== null ? JSON.stringify(value) : value;
  }
  return cols;
}

export function rowToSession(r: Record<string, unknown>): SessionRow {
  return {
    id: r.id as string,
    principal: r.principal as string,
    profile: r.profile as string,
    title: r.title as string,
    parent_session_id: (r.parent_session_id as string | null) ?? null,
    model: r.model as string,
    provider: r.provider as string,
    model_config: JSON.parse(r.model_config as string),
    flags: JSON.parse(r.flags as string),
    todo: JSON.parse(r.todo as string),
    started_at: Number(r.started_at),
    last_activity_at: Number(r.last_activity_at),
    ended_at: r.ended_at === null ? null : Number(r.ended_at),
    end_reason: (r.end_reason as string | null) ?? null,
    seq_reserved: Number(r.seq_reserved),
    active_turn: r.active_turn ? JSON.parse(r.active_turn as string) : null,
  };
}

export function messageToColumns(row: MessageRow): Record<string, unknown> {
  return {
    ...row,
    tool_calls: row.tool_calls ? JSON.stringify(row.tool_calls) : null,
    display_metadata: row.display_metadata ? JSON.stringify(row.display_metadata) : null,
  };
}

export function rowToMessage(r: Record<string, unknown>): MessageRow {
  return {
    id: r.id as string,
    session_id: r.session_id as string,
    role: r.role as MessageRow["role"],
    content: r.content as string,
    tool_calls: r.tool_calls ? JSON.parse(r.tool_calls as string) : null,
    tool_call_id: (r.tool_call_id as string | null) ?? null,
    display_kind: (r.display_kind as string | null) ?? null,
    display_metadata: r.display_metadata ? JSON.parse(r.display_metadata as string) : null,
    status: r.status as MessageRow["status"],
    created_at: Number(r.created_at),
    created_seq: Number(r.created_seq),
  };
}
