/**
 * The sessions list's order and groups: newest first by start time (so renaming or closing a
 * session, which touches its activity, never moves its row), grouped by the day it started.
 */
import type { SessionSummary } from "../../src/protocol/index.js";

/** Today / Yesterday / Earlier, by the day a session started (its place in the list never moves). */
export function dayGroup(ms: number, now = Date.now()): "Today" | "Yesterday" | "Earlier" {
  const start = new Date(now);
  start.setHours(0, 0, 0, 0);
  if (ms >= start.getTime()) return "Today";
  start.setDate(start.getDate() - 1); // a calendar day back (not 24 h: DST days differ)
  if (ms >= start.getTime()) return "Yesterday";
  return "Earlier";
}

export function relativeTime(ms: number, now = Date.now()): string {
  const s = Math.round((now - ms) / 1000);
  if (s < 45) return "just now";
  if (s < 3600) return `${Math.max(1, Math.round(s / 60))} min ago`;
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`;
  if (s < 172_800) return "yesterday";
  return new Date(ms).toLocaleDateString();
}

/** Newest first by start time; ties by id, so the order is total and never flips. */
export function stableOrder(sessions: SessionSummary[]): SessionSummary[] {
  return [...sessions].sort((a, b) => b.started_at - a.started_at || (a.session_id < b.session_id ? -1 : 1));
}

export function grouped(sessions: SessionSummary[]): Array<{ label: string; items: SessionSummary[] }> {
  const out: Array<{ label: string; items: SessionSummary[] }> = [];
  for (const s of stableOrder(sessions)) {
    const label = dayGroup(s.started_at);
    const last = out[out.length - 1];
    if (last?.label === label) last.items.push(s);
    else out.push({ label, items: [s] });
  }
  return out;
}

