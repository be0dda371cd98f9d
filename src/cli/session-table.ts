/** The sessions table shared by `tether sessions list` and `/sessions` in chat. */
import { terminalText } from "./terminal-safe.js";
import type { SessionSummary } from "../protocol/index.js";

const MAX_TITLE = 32;

export function formatSessionTable(sessions: SessionSummary[], now: number, currentId?: string): string {
  if (sessions.length === 0) return "no sessions\n";
  const header = ["ID", "STATE", "TITLE", "MODEL", "MESSAGES", "LAST ACTIVITY"];
  const rows = sessions.map((s) => [
    // The current session is starred; the others are indented so ids stay aligned.
    (currentId === undefined ? "" : s.session_id === currentId ? "* " : "  ") + s.session_id,
    stateCell(s),
    truncate(terminalText(s.title || "(untitled)"), MAX_TITLE),
    s.model,
    String(s.message_count),
    formatWhen(s.last_activity_at, now),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 4 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)].join("\n") + "\n";
}

/** `idle` says it resumes (it is not gone); `ended` says why. */
function stateCell(s: SessionSummary): string {
  if (s.state === "idle") return "idle (resumes on open)";
  if (s.state === "ended" && s.end_reason) return `ended (${s.end_reason})`;
  return s.state;
}

/** Recent times as an age ("5m ago"), older ones as a date: what a person scanning a list wants. */
export function formatWhen(ts: number, now: number): string {
  const s = Math.max(0, Math.round((now - ts) / 1000));
  if (s < 10) return "just now";
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`;
  const d = new Date(ts);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function truncate(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ");
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}
