/** What a crash test's viewers were shown, and how much of it the store failed to keep. */
import type { SseEvent } from "../support/sse-client.js";

/** Characters of `shown` past its longest common prefix with `kept`: 0 when nothing shown was lost. */
export function lostChars(shown: string, kept: string): number {
  let i = 0;
  while (i < shown.length && i < kept.length && shown.charCodeAt(i) === kept.charCodeAt(i)) i++;
  return shown.length - i;
}

/**
 * The first assistant message's text as an SSE reader of a session's events renders it: deltas
 * append, a `session.catchup` snapshot replaces the text with the server's as of its seq.
 */
export function sseText(events: readonly SseEvent[]): string {
  let id: string | undefined;
  let text = "";
  for (const e of events) {
    const data = JSON.parse(e.data) as { payload?: { message_id?: string; role?: string; text?: string }; snapshots?: Array<{ message_id: string; text: string }> };
    if (e.event === "message.start" && data.payload?.role === "assistant") id ??= data.payload.message_id;
    else if (e.event === "message.delta" && data.payload?.message_id === id) text += data.payload?.text ?? "";
    else if (e.event === "session.catchup") {
      const snap = data.snapshots?.find((s) => s.message_id === id);
      if (snap) text = snap.text;
    }
  }
  return text;
}
