/**
 * Small parts around the transcript: suggestion chips in an empty session, the jump-to-latest
 * button while a reply streams below the fold, and the context meter (how close the session is to
 * compression: its last turn's tokens against the model's `compress_at_tokens`).
 */
import { Icon } from "./icons.js";
import type { AppController } from "./controller.js";
import type { SessionModel } from "./model.js";
import { formatCount } from "./labels.js";

const DEMO_CHIPS: Array<[string, string]> = [
  ["count to 20", "a streamed reply"],
  ["todo: plan; build; ship", "a tool call and the todo panel"],
  ["fail: provider/rate_limited", "an error card"],
  ["delegate: write a haiku; check the spelling", "background sub-agents"],
];
const CHIPS: Array<[string, string]> = [
  ["Explain how a WebSocket reconnects", ""],
  ["Write a haiku about the sea", ""],
  ["Summarize the last thing I pasted", ""],
];

/** Prompts to start with, in an empty session or a draft (a click sends it: a draft's creates the session). */
export function SuggestionChips({ ctl, provider }: { ctl: AppController; provider: string | undefined }) {
  const chips = provider === "demo" ? DEMO_CHIPS : CHIPS;
  const send = (text: string) => void (ctl.current ? ctl.submit(text) : ctl.startSession(text));
  return (
    <div class="hint">
      <p>{provider === "demo" ? "Send a message to start. The demo model understands:" : "Send a message to start, or try:"}</p>
      <div class="chips" role="group" aria-label="Suggestions">
        {chips.map(([text, what]) => (
          <button key={text} type="button" class="chip" title={what || undefined} onClick={() => send(text)}>
            <code>{text}</code>
            {what && <span class="chip-what"> — {what}</span>}
          </button>
        ))}
      </div>
    </div>
  );
}

export function JumpToLatest({ onJump }: { onJump(): void }) {
  return (
    <button type="button" class="jump-latest" onClick={onJump}>
      Jump to latest <Icon name="down" size={14} />
    </button>
  );
}

/** The session's context as of its last finished reply (prompt + completion tokens). */
export function contextTokens(model: SessionModel): number | undefined {
  for (let i = model.blocks.length - 1; i >= 0; i--) {
    const u = model.usage[model.blocks[i]!.key];
    if (u) return u.prompt_tokens + u.completion_tokens;
  }
  // No reply with usage in view (an older transcript, a provider without usage): the gateway's count.
  return model.contextTokens || undefined;
}

export function ContextMeter({ ctl, model }: { ctl: AppController; model: SessionModel }) {
  const used = contextTokens(model);
  if (used === undefined) return null;
  const at = ctl.models.find((m) => m.id === model.model)?.compressAt;
  if (!at) {
    return (
      <span class="context" data-testid="context">
        Context {formatCount(used)} tokens
      </span>
    );
  }
  const pct = Math.min(100, Math.round((used / at) * 100));
  return (
    <span class="context" data-testid="context" title={`The session compresses at ${formatCount(at)} tokens`}>
      <span
        class="meter"
        role="meter"
        aria-label="Context used before compression"
        aria-valuemin={0}
        aria-valuemax={at}
        aria-valuenow={Math.min(used, at)}
        aria-valuetext={`${pct}%`}
      >
        <span class="meter-fill" style={{ width: `${pct}%` }} />
      </span>
      Context {formatCount(used)} / {formatCount(at)} tokens ({pct}%)
    </span>
  );
}
