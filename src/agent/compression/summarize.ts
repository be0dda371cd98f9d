/**
 * Summarizing the middle of a conversation with the session's own provider. A failure (the
 * provider errs, the stream is cut, the summary is empty) throws: the caller leaves the session
 * unchanged and backs off.
 */
import { describeAttachments } from "../demo-attachments.js";
import type { MessageRow } from "../../store/types.js";
import type { Provider } from "../provider.js";
import { ProviderError } from "../provider.js";

/** The user message of a summary request starts with this (the demo provider answers it). */
export const SUMMARY_CUE = "summarize:";

const INSTRUCTIONS =
  "You compress conversations. Write a concise summary of the conversation excerpt the user sends: " +
  "the goals, decisions, facts, file names, open questions and the state of the work. " +
  "It replaces the excerpt in the conversation, so keep everything needed to carry on. Answer with the summary only.";

/** Longest transcript text sent for summarizing (the excerpt is cut in the middle beyond it). */
const MAX_EXCERPT_CHARS = 200_000;

export class SummaryError extends Error {
  override name = "SummaryError";
}

export function transcriptOf(rows: readonly MessageRow[]): string {
  const lines: string[] = [];
  for (const r of rows) {
    let text = r.content;
    if (r.tool_calls && r.tool_calls.length > 0) {
      text += (text ? "\n" : "") + r.tool_calls.map((c) => `[calls ${c.name}(${c.arguments})]`).join("\n");
    }
    // Attachments are named (the summary says they were there; their bytes stay with the old session).
    const attached = describeAttachments(r.parts ?? undefined);
    if (attached) text += (text ? "\n" : "") + `[${attached}]`;
    // A row with nothing to say (an error message: its card is the client's, not the model's) is left out.
    if (!text) continue;
    lines.push(`${r.role}: ${text}`);
  }
  let out = lines.join("\n");
  if (out.length > MAX_EXCERPT_CHARS) {
    const half = MAX_EXCERPT_CHARS / 2;
    out = `${out.slice(0, half)}\n[…]\n${out.slice(-half)}`;
  }
  return out;
}

export async function summarize(
  provider: Provider,
  model: string,
  rows: readonly MessageRow[],
  signal: AbortSignal,
): Promise<string> {
  let text = "";
  try {
    for await (const chunk of provider.stream({
      model,
      messages: [
        { role: "system", content: INSTRUCTIONS },
        { role: "user", content: `${SUMMARY_CUE}\n${transcriptOf(rows)}` },
      ],
      signal,
    })) {
      if (chunk.type === "text") text += chunk.text;
    }
  } catch (err) {
    if (err instanceof ProviderError) throw new SummaryError(`${err.info.layer}/${err.info.code}: ${err.info.message}`, { cause: err });
    throw new SummaryError(err instanceof Error ? err.message : String(err), { cause: err });
  }
  text = text.trim();
  if (!text) throw new SummaryError("the provider returned an empty summary");
  return text;
}
