/**
 * Which messages a compression keeps and which it summarizes: the first `protect_first_n`
 * (the task as stated) and the last `protect_last_n` (the work in hand) stay verbatim; the middle
 * is replaced by a summary. A boundary never separates an assistant's tool calls from their
 * results: the head grows to include the results, the tail grows back to include the call.
 */
import type { MessageRow } from "../../store/types.js";

export interface CompressionPlan {
  head: MessageRow[];
  middle: MessageRow[];
  tail: MessageRow[];
}

export function planCompression(rows: readonly MessageRow[], protectFirst: number, protectLast: number): CompressionPlan {
  // Only finished messages take part (compression runs between turns; a stray streaming row stays out).
  const msgs = rows.filter((r) => r.status !== "streaming");
  let headEnd = Math.min(protectFirst, msgs.length);
  // Extend the head over the results of a tool-calling assistant message it ends with.
  while (headEnd < msgs.length && msgs[headEnd]!.role === "tool") headEnd++;
  let tailStart = Math.max(headEnd, msgs.length - protectLast);
  // Never start the tail with a tool result: pull its assistant call (and sibling results) in.
  while (tailStart > headEnd && msgs[tailStart]?.role === "tool") tailStart--;
  return { head: msgs.slice(0, headEnd), middle: msgs.slice(headEnd, tailStart), tail: msgs.slice(tailStart) };
}
