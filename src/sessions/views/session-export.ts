/**
 * A session's transcript as a file the operator keeps: the whole compression lineage (every
 * session it was compressed from, and every continuation up to the live tip), oldest first.
 * `GET /api/sessions/{id}/export` and `tether export SESSION` both come here.
 *
 * - `jsonl`: one JSON object per line — `{ "type": "export", … }` first, then for each session of
 *   the lineage `{ "type": "session", … }` followed by its `{ "type": "message", … }` lines (wire
 *   `Message` shape, `session_id` added: the active branch, a prompt with versions carrying them),
 *   then `{ "type": "hidden_message", hidden_by, … }` for every message off the active branch (an
 *   edited or regenerated prompt's earlier versions, and what followed them), then one
 *   `{ "type": "blob", sha256, media_type, size, created_at, data }` line (data: base64) per
 *   attachment the lineage's messages reference, so the file keeps the bytes a part names by
 *   sha256. Lossless; what a script or an import reads.
 * - `markdown`: headings per session, each message with its role, tool calls and results as code
 *   blocks, and its attachments listed (kind, filename, media type, size, sha256 — or the URL it
 *   was sent as); the bytes are in the jsonl export and `GET /api/blobs/{sha256}`. What a person reads.
 *
 * Scoped like every read: another principal's session (or one in its lineage) answers 4007.
 */
import { ErrorCode, TetherError, isAttachment, type AttachmentPart, type Message } from "../../protocol/index.js";
import type { BlobRow, SessionRow, Store } from "../../store/types.js";
import { continuationOf } from "../core/live-tip.js";
import type { Caller } from "../core/types.js";
import { toWireMessage } from "../core/messages.js";
import { requireRow, storage } from "../core/session-access.js";
import { versionGroups, withVersions } from "../core/versions.js";

export const EXPORT_FORMATS = ["jsonl", "markdown"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export interface ExportedTranscript {
  format: ExportFormat;
  contentType: string;
  /** A file name for the download (`<session>.jsonl` / `.md`). */
  filename: string;
  body: string;
}

/** A lineage longer than this is a bug (a cycle); the export stops there. */
const MAX_LINEAGE = 1000;

interface LineageEntry {
  row: SessionRow;
  messages: Message[];
  /** Off the active branch, each with the version whose leaving hid it. */
  hidden: Array<Message & { hidden_by: string }>;
}

export function isExportFormat(value: string): value is ExportFormat {
  return (EXPORT_FORMATS as readonly string[]).includes(value);
}

/** The sessions of `row`'s compression lineage, oldest first (ancestors, itself, continuations). */
async function lineageOf(store: Store, caller: Caller, row: SessionRow): Promise<SessionRow[]> {
  const before: SessionRow[] = [];
  let current = row;
  while (before.length < MAX_LINEAGE && current.parent_session_id) {
    const parent = await store.getSession(current.parent_session_id);
    // A continuation's parent names it in `continued_in`; a sub-agent's origin does not.
    if (!parent || parent.flags.continued_in !== current.id || parent.principal !== caller.principal) break;
    before.unshift(parent);
    current = parent;
  }
  const after: SessionRow[] = [];
  current = row;
  for (let i = 0; i < MAX_LINEAGE; i++) {
    const child = await continuationOf(store, current);
    if (!child || child.principal !== caller.principal || after.some((s) => s.id === child.id)) break;
    after.push(child);
    current = child;
  }
  return [...before, row, ...after];
}

export async function exportSession(store: Store, caller: Caller, sessionId: string, format: ExportFormat, now: number): Promise<ExportedTranscript> {
  if (!isExportFormat(format)) {
    throw new TetherError(ErrorCode.InvalidParams, `format must be one of ${EXPORT_FORMATS.join(", ")}`, {
      issues: [{ path: ["format"], message: `expected ${EXPORT_FORMATS.join(" | ")}` }],
    });
  }
  const row = await requireRow(store, caller, sessionId);
  const rows = await storage(() => lineageOf(store, caller, row));
  const entries: LineageEntry[] = [];
  for (const r of rows) {
    const messages = await storage(() => store.loadMessages(r.id));
    const versions = await storage(() => store.messageVersions(r.id));
    const hidden: LineageEntry["hidden"] = [];
    // Rows are hidden by a version (a user message of a group): one read per version.
    for (const v of versions) {
      for (const h of await storage(() => store.loadHidden(r.id, v.id))) hidden.push({ ...toWireMessage(h), hidden_by: v.id });
    }
    hidden.sort((a, b) => a.created_at - b.created_at);
    entries.push({ row: r, messages: withVersions(messages.map(toWireMessage), versionGroups(versions)), hidden });
  }
  if (format === "jsonl") {
    const blobs = store.blobs ? await storage(() => store.blobs!.blobsOf(rows.map((r) => r.id))) : [];
    return { format, contentType: "application/x-ndjson; charset=utf-8", filename: `${sessionId}.jsonl`, body: toJsonl(sessionId, entries, blobs, now) };
  }
  return { format, contentType: "text/markdown; charset=utf-8", filename: `${sessionId}.md`, body: toMarkdown(sessionId, entries, now) };
}

function sessionHeader(row: SessionRow) {
  return {
    session_id: row.id,
    title: row.title,
    profile: row.profile,
    model: row.model,
    provider: row.provider,
    parent_session_id: row.parent_session_id,
    continued_in: row.flags.continued_in ?? null,
    started_at: row.started_at,
    last_activity_at: row.last_activity_at,
    ended_at: row.ended_at,
    end_reason: row.end_reason,
    todo: row.todo,
  };
}

function toJsonl(asked: string, entries: LineageEntry[], blobs: readonly BlobRow[], now: number): string {
  const lines: string[] = [
    JSON.stringify({ type: "export", version: 1, session_id: asked, lineage: entries.map((e) => e.row.id), exported_at: now }),
  ];
  for (const e of entries) {
    lines.push(JSON.stringify({ type: "session", ...sessionHeader(e.row) }));
    for (const m of e.messages) lines.push(JSON.stringify({ type: "message", session_id: e.row.id, ...m }));
    for (const m of e.hidden) lines.push(JSON.stringify({ type: "hidden_message", session_id: e.row.id, ...m }));
  }
  // Sorted so two exports of the same lineage are the same file.
  for (const b of [...blobs].sort((x, y) => x.sha256.localeCompare(y.sha256))) {
    const data = Buffer.from(b.data.buffer, b.data.byteOffset, b.data.byteLength).toString("base64");
    lines.push(JSON.stringify({ type: "blob", sha256: b.sha256, media_type: b.media_type, size: b.size, created_at: b.created_at, data }));
  }
  return `${lines.join("\n")}\n`;
}

/** A fence longer than any backtick run in `text`, so content can never close its own block. */
function fenced(text: string, lang = ""): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = "`".repeat(longest + 1);
  return `${fence}${lang}\n${text}\n${fence}`;
}

function iso(ms: number | null): string {
  return ms === null ? "—" : new Date(ms).toISOString();
}

function toMarkdown(asked: string, entries: LineageEntry[], now: number): string {
  const out: string[] = [];
  const title = entries.find((e) => e.row.id === asked)?.row.title || asked;
  out.push(`# ${title}`, "");
  out.push(`Exported from Tether at ${iso(now)}: session \`${asked}\`` + (entries.length > 1 ? `, with its compression lineage (${entries.length} sessions, oldest first).` : "."), "");
  for (const e of entries) {
    const r = e.row;
    out.push(`## ${r.title || r.id}`, "");
    out.push(`- session: \`${r.id}\`${r.parent_session_id ? ` (continues \`${r.parent_session_id}\`)` : ""}`);
    out.push(`- model: ${r.model} (${r.provider}), profile ${r.profile}`);
    out.push(`- started ${iso(r.started_at)}; ${r.ended_at === null ? "not ended" : `ended ${iso(r.ended_at)} (${r.end_reason ?? "ended"})`}`);
    if (r.flags.continued_in) out.push(`- continued in \`${r.flags.continued_in}\``);
    out.push("");
    for (const m of e.messages) out.push(...messageMarkdown(m), "");
    if (e.hidden.length > 0) out.push(`*${e.hidden.length} message(s) of earlier versions (edited or regenerated prompts) are in the jsonl export.*`, "");
  }
  return `${out.join("\n").trimEnd()}\n`;
}

function messageMarkdown(m: Message): string[] {
  const when = iso(m.created_at);
  const status = m.status === "complete" ? "" : ` — *${m.status}*`;
  if (m.role === "tool") {
    return [`**tool result** \`${m.tool_call_id ?? ""}\` · ${when}${status}`, "", fenced(m.content, "json"), ...attachmentsMarkdown(m)];
  }
  const lines = [`**${m.role}**${m.display_kind ? ` (${m.display_kind})` : ""} · ${when}${status}`, ""];
  if (m.content) lines.push(m.content);
  lines.push(...attachmentsMarkdown(m));
  for (const call of m.tool_calls ?? []) lines.push("", `tool call \`${call.name}\` (\`${call.id}\`):`, "", fenced(call.arguments, "json"));
  if (m.error) lines.push("", `> error: ${m.error.layer}/${m.error.code} — ${m.error.message}`);
  return lines;
}

/** A message's attachments as a list: what each is and which blob holds it (or the URL it was sent as). */
function attachmentsMarkdown(m: Message): string[] {
  const attachments = (m.parts ?? []).filter(isAttachment);
  if (attachments.length === 0) return [];
  return ["", "attachments:", "", ...attachments.map(attachmentLine)];
}

function attachmentLine(p: AttachmentPart): string {
  const name = p.type === "file" && p.filename ? ` ${code(p.filename)}` : "";
  const dims = p.type === "image" && p.width !== undefined && p.height !== undefined ? ` ${p.width}\u00d7${p.height}` : "";
  const where = p.sha256 !== undefined ? `${p.size ?? 0} B · sha256 ${code(p.sha256)}` : `${code(p.url ?? "")} (sent as a URL, not stored)`;
  return `- ${p.type}${name} · ${code(p.media_type)}${dims} · ${where}`;
}

/** Inline code no content can close or break out of (a filename is the user's text). */
function code(text: string): string {
  const flat = text.replace(/[\r\n]+/g, " ");
  const longest = Math.max(0, ...[...flat.matchAll(/`+/g)].map((x) => x[0].length));
  const ticks = "`".repeat(longest + 1);
  const pad = flat.startsWith("`") || flat.endsWith("`") ? " " : "";
  return `${ticks}${pad}${flat}${pad}${ticks}`;
}
