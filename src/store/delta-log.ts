/**
 * The delta log read back. A message still `streaming` in the store has its text in
 * `message_deltas` (every delta a viewer was sent, committed before it was sent), not in its row:
 * the row is written once at `message.start` and once at `message.complete`, which also drops the
 * log. Every read of messages goes through here, so recovery, the HTTP API, exports and other nodes
 * all see the text the viewers saw.
 */
import type { MessageRow } from "./rows.js";

/**
 * Fills the content of each streaming row from its delta log (`readLog` = message id → text, read
 * only when some row is streaming). A streaming row without a log keeps its content (a row written
 * by a version that checkpointed the text into it).
 */
export async function withStreamedText(
  sessionId: string,
  rows: MessageRow[],
  readLog: (sessionId: string) => Promise<Map<string, string>> | Map<string, string>,
): Promise<MessageRow[]> {
  if (!rows.some((r) => r.status === "streaming")) return rows;
  const log = await readLog(sessionId);
  if (log.size === 0) return rows;
  for (const r of rows) {
    if (r.status !== "streaming") continue;
    const text = log.get(r.id);
    if (text !== undefined) r.content = text;
  }
  return rows;
}

/** Joins `(message_id, text)` rows read in (message_id, seq) order into message id → text. */
export function joinDeltaRows(rows: ReadonlyArray<{ message_id: string; text: string }>): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of rows) out.set(r.message_id, (out.get(r.message_id) ?? "") + r.text);
  return out;
}
