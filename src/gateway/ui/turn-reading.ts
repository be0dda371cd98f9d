/**
 * What every UI protocol translator needs when it reads a turn's frames: the text of each message
 * emitted so far (so a replay never sends a piece twice, and a message completed with more text
 * than its deltas carried gets the rest), the tool calls an assistant message made, and tool
 * arguments as the model wrote them.
 */
import { EventType, type Frame, type MessageCompletePayload, type MessageSnapshot, type ToolCompletePayload } from "../../protocol/index.js";

/** Per message (or reasoning) id: the text a client has been sent. */
export class TextProgress {
  private readonly sent = new Map<string, string>();

  /** A delta as it streamed: sent as it is. */
  append(id: string, delta: string): string {
    this.sent.set(id, (this.sent.get(id) ?? "") + delta);
    return delta;
  }

  /**
   * The whole text so far (a `message.complete`, a snapshot): the part not sent yet. A text that
   * does not continue what was sent (it never happens in one log) adds nothing rather than a
   * contradiction.
   */
  growTo(id: string, whole: string): string {
    const before = this.sent.get(id) ?? "";
    if (whole.length <= before.length || !whole.startsWith(before)) return "";
    this.sent.set(id, whole);
    return whole.slice(before.length);
  }

  has(id: string): boolean {
    return this.sent.has(id);
  }
}

/** The calls an assistant message made, in order, with their arguments parsed. */
export function callsOf(m: MessageCompletePayload): Array<{ id: string; name: string; arguments: string; input: unknown }> {
  return (m.tool_calls ?? []).map((c) => ({ ...c, input: parseArgs(c.arguments) }));
}

/** Tool arguments as JSON when they are, else the text the model wrote. */
export function parseArgs(text: string): unknown {
  try {
    return JSON.parse(text === "" ? "{}" : text);
  } catch {
    return text;
  }
}

/** The call ids a batch of frames completes (a replay that knows a call's end before it shows its start). */
export function completedCalls(frames: readonly Frame[]): Set<string> {
  const done = new Set<string>();
  for (const f of frames) if (f.type === EventType.ToolComplete) done.add((f.payload as ToolCompletePayload).call_id);
  return done;
}

/** The snapshot of each message still streaming, by message id. */
export function snapshotsById(snapshots: readonly MessageSnapshot[]): Map<string, MessageSnapshot> {
  return new Map(snapshots.map((s) => [s.message_id, s]));
}
