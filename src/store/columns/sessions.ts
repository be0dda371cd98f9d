/**
 * Sessions and messages as columns, the same for every store: JSON values are kept as text (so a
 * stored payload comes back byte for byte), timestamps and seqs as integers (PostgreSQL BIGINT
 * comes back as a string, hence Number()).
 */
import type { MessagePatch, MessageRow, SessionPatch, SessionRow, VersionRow } from "../rows.js";
import type { ContentPart } from "../../protocol/index.js";

const JSON_SESSION_COLUMNS = new Set(["model_config", "flags", "todo", "active_turn"]);

/** The columns a session patch may set: never its id, principal or seq reservation (seq.reserve does that). */
const PATCHABLE_SESSION_COLUMNS = new Set([
  "profile", "title", "parent_session_id", "model", "provider", "model_config", "flags", "todo",
  "started_at", "last_activity_at", "ended_at", "end_reason", "active_turn",
]);

export function sessionToColumns(row: SessionRow): Record<string, unknown> {
  return {
    ...row,
    model_config: JSON.stringify(row.model_config),
    flags: JSON.stringify(row.flags),
    todo: JSON.stringify(row.todo),
    active_turn: row.active_turn ? JSON.stringify(row.active_turn) : null,
  };
}

/** The columns a session patch sets (undefined keys are left out; JSON values as text). */
export function sessionPatchToColumns(patch: SessionPatch): Record<string, unknown> {
  const cols: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined || !PATCHABLE_SESSION_COLUMNS.has(key)) continue;
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
    branch_of: row.branch_of ?? null,
    hidden_by: row.hidden_by ?? null,
    parts: row.parts && row.parts.length > 0 ? JSON.stringify(row.parts) : null,
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
    ...(r.branch_of ? { branch_of: r.branch_of as string } : {}),
    ...(r.hidden_by ? { hidden_by: r.hidden_by as string } : {}),
    ...(r.parts ? { parts: JSON.parse(r.parts as string) as ContentPart[] } : {}),
  };
}

/** The blobs a message's parts reference (each once): `blob_refs` rows written with its insert. */
export function blobRefsOf(row: MessageRow): string[] {
  const out = new Set<string>();
  for (const p of row.parts ?? []) if (p.type !== "text" && p.sha256) out.add(p.sha256);
  return [...out];
}

/** A row of a versions read: `root` is the group (the first version's id). */
export function rowToVersion(r: Record<string, unknown>): VersionRow {
  return {
    id: r.id as string,
    root: (r.branch_of as string | null) ?? (r.id as string),
    hidden_by: (r.hidden_by as string | null) ?? null,
    created_seq: Number(r.created_seq),
  };
}

/** The columns a message patch sets, in a fixed order (undefined keys are left out). */
export function messagePatchToColumns(patch: MessagePatch): Record<string, unknown> {
  const cols: Record<string, unknown> = {};
  if (patch.content !== undefined) cols.content = patch.content;
  if (patch.status !== undefined) cols.status = patch.status;
  if (patch.tool_calls !== undefined) cols.tool_calls = patch.tool_calls ? JSON.stringify(patch.tool_calls) : null;
  if (patch.display_metadata !== undefined) cols.display_metadata = patch.display_metadata ? JSON.stringify(patch.display_metadata) : null;
  return cols;
}

/** Versions in transcript order (created_seq, then id), as both stores answer them. */
export function sortVersions(rows: VersionRow[]): VersionRow[] {
  return rows.sort((a, b) => a.created_seq - b.created_seq || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
