/**
 * Continue: a turn with no user message whose history ends with the assistant's own text (a reply
 * cut by Stop, a restart, a failure) asks the model to go on with that reply. The ask is a note in
 * the model calls of that turn only, right after the cut reply: never stored and never shown, so
 * the transcript reads as the same reply going on — no made-up prompt in it.
 *
 *   ctx.continueAt = continuationPoint(ctx.history);   // at the turn's start
 *   const messages = withContinuation(ctx.history, ctx.continueAt);
 */
import type { ChatMessage } from "./provider.js";

/** What the model is told (the demo provider knows it: it goes on with its own cut reply). */
export const CONTINUE_NOTE = "Continue exactly where your previous reply stopped, with no repetition and no preamble.";

/** Where the note goes: after the last message when that is the assistant's text; none otherwise (tool results, an unanswered prompt). */
export function continuationPoint(history: readonly ChatMessage[]): number | undefined {
  const last = history[history.length - 1];
  if (!last || last.role !== "assistant" || !last.content || (last.tool_calls?.length ?? 0) > 0) return undefined;
  return history.length;
}

/** The history with the note at `at` (a copy; the history itself never holds it). */
export function withContinuation(history: readonly ChatMessage[], at: number | undefined): ChatMessage[] {
  if (at === undefined || at > history.length) return [...history];
  return [...history.slice(0, at), { role: "user", content: CONTINUE_NOTE }, ...history.slice(at)];
}
