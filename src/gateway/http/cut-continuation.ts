/**
 * A continuation cut by a crash (issue #28): the client's tool results reached the session (their
 * tool messages are stored, the calls answered) and the model was answering them when the process
 * died; the next open finished that turn `interrupted` with `stop_reason: "restart"` before any
 * reply was whole. The same request retried with its `Idempotency-Key` then resumes from the stored
 * results — a new model call on the history as it stands (a turn with no new input); the calls are
 * not answered (nor run) again. Anything else (a result that differs from the stored one, a reply
 * the model finished, a later prompt) is not this case, and the request is refused as before.
 */
import type { Caller, Profile } from "../../sessions/index.js";
import type { Message } from "../../protocol/index.js";

export interface SentResult {
  callId: string;
  content: string;
}

const PAGE = 500;

/** True when the session's transcript ends with exactly these results, then only replies a restart cut. */
export async function cutAfterResults(sessions: Profile["sessions"], caller: Caller, sessionId: string, results: readonly SentResult[]): Promise<boolean> {
  if (results.length === 0) return false;
  const messages = await transcript(sessions, caller, sessionId);
  let last = -1;
  for (const r of results) {
    const i = messages.findLastIndex((m) => m.role === "tool" && m.tool_call_id === r.callId);
    if (i < 0 || messages[i]!.content !== r.content) return false;
    last = Math.max(last, i);
  }
  // Only the model's cut answers (and the other results of the same calls) may follow.
  return messages.slice(last + 1).every((m) => m.role === "assistant" && m.status === "interrupted" && m.stop_reason === "restart");
}

async function transcript(sessions: Profile["sessions"], caller: Caller, sessionId: string): Promise<Message[]> {
  const all: Message[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await sessions.messages(caller, sessionId, after, PAGE);
    all.push(...page.messages);
    if (!page.next_cursor || page.messages.length === 0) return all;
    after = page.next_cursor;
  }
}
