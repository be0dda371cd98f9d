/**
 * The demo provider's answer to a continue (continuation.ts): the reply it would have given to
 * the prompt before the cut one, minus what the cut reply already said — so `count to 50`
 * stopped at 12 goes on with " 13" and ends at 50, as one reply read end to end.
 */
import { CONTINUE_NOTE } from "./continuation.js";
import type { DemoPlan } from "./demo-stream.js";
import type { ChatMessage, StreamRequest } from "./provider.js";

/** The plan of a continue, or null when the last user message is not the continue note. */
export function planContinue(req: StreamRequest, replan: (req: StreamRequest) => DemoPlan): DemoPlan | null {
  const msgs = req.messages;
  const note = lastUserIndex(msgs, msgs.length);
  if (note < 0 || msgs[note]!.content !== CONTINUE_NOTE) return null;
  const prompt = lastUserIndex(msgs, note);
  const written = msgs
    .slice(prompt + 1, note)
    .map((m) => (m.role === "assistant" ? (m.content ?? "") : ""))
    .join("");
  const whole = prompt >= 0 ? replan({ ...req, messages: msgs.slice(0, prompt + 1) }) : null;
  const rest = whole?.kind === "text" ? after(whole.chunks, written) : null;
  return { kind: "text", chunks: rest && rest.length > 0 ? rest : [" (That was the whole reply.)"] };
}

/** The chunks past `written` (cut inside one: the rest of it), or null when `written` is not their start. */
function after(chunks: readonly string[], written: string): string[] | null {
  if (!chunks.join("").startsWith(written)) return null;
  let at = 0;
  const out: string[] = [];
  for (const c of chunks) {
    const end = at + c.length;
    if (end > written.length) out.push(at >= written.length ? c : c.slice(written.length - at));
    at = end;
  }
  return out;
}

function lastUserIndex(msgs: readonly ChatMessage[], before: number): number {
  for (let i = before - 1; i >= 0; i--) if (msgs[i]!.role === "user") return i;
  return -1;
}
