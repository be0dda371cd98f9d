/**
 * The transcript's messages, exchange by exchange (versions.ts): a regenerated or edited exchange
 * shows in its first version's place with "‹ 2 / 2 ›" to see the previous ones. Regenerate, edit
 * and Continue are offered on the newest exchange only — the one a new turn really follows.
 */
import { Fragment } from "preact";
import { useState } from "preact/hooks";
import { BlockView, PendingView, type BlockActions, type ExchangeActions } from "./blocks.js";
import type { AppController } from "./controller.js";
import type { SessionModel } from "./model.js";
import { isLatest, shownExchanges, type Choice, type ShownExchange } from "./versions.js";

/** The words a Continue sends: the model picks up its interrupted reply. */
export const CONTINUE_TEXT = "Continue exactly where your previous reply stopped.";

function exchangeActions(ctl: AppController, model: SessionModel, ex: ShownExchange, latest: boolean): ExchangeActions {
  if (!latest || !ex.key || model.running || model.state === "ended") return {};
  const regenerating = model.pending.some((q) => q.replaces === ex.key);
  if (regenerating) return {};
  return {
    regenerate: () => void ctl.regenerate(ex.key),
    edit: (text) => void ctl.regenerate(ex.key, text),
    resume: () => void ctl.submit(CONTINUE_TEXT),
  };
}

function VersionSwitch({ ex, onChoose }: { ex: ShownExchange; onChoose(n: number): void }) {
  return (
    <div class="versions" role="group" aria-label="Versions" data-testid="versions">
      <button type="button" class="msg-action" aria-label="Previous version" disabled={ex.version <= 1} onClick={() => onChoose(ex.version - 1)}>
        ‹
      </button>
      <span class="versions-count">
        {ex.version} / {ex.versions}
      </span>
      <button type="button" class="msg-action" aria-label="Next version" disabled={ex.version >= ex.versions} onClick={() => onChoose(ex.version + 1)}>
        ›
      </button>
    </div>
  );
}

export function ExchangeList({ ctl, model, actions }: { ctl: AppController; model: SessionModel; actions: BlockActions }) {
  const [chosen, setChosen] = useState<Record<string, Choice>>({});
  const shown = shownExchanges(model, chosen);
  return (
    <>
      {shown.map((ex) => {
        const latest = isLatest(shown, ex);
        const ea = exchangeActions(ctl, model, ex, latest);
        const regenerating = model.pending.some((q) => q.replaces && q.status !== "failed" && ex.chain.includes(q.replaces));
        let reply = -1;
        ex.blocks.forEach((b, n) => {
          if (b.kind === "assistant" || b.kind === "error") reply = n;
        });
        return (
          // Flat in the transcript (no wrapper): each block stays a direct child of the transcript.
          <Fragment key={ex.chain[0] ?? "start"}>
            {ex.blocks.map((b, n) => (
              <Fragment key={b.key}>
                <BlockView block={b} actions={actions} ex={b.kind === "user" ? { ...(ea.edit ? { edit: ea.edit } : {}) } : n === reply ? ea : {}} />
                {n === 0 && ex.versions > 1 && <VersionSwitch ex={ex} onChoose={(v) => setChosen({ ...chosen, [ex.chain[0]!]: { n: v, of: ex.versions } })} />}
              </Fragment>
            ))}
            {regenerating && (
              <div class="notice notice-info" role="status">
                Regenerating…
              </div>
            )}
          </Fragment>
        );
      })}
      {model.pending
        .filter((q) => !q.replaces || q.status === "failed")
        .map((q) => (
          <PendingView
            key={q.requestId}
            prompt={q}
            paused={ctl.linkDown}
            onDismiss={() => ctl.dismissPending(q.requestId)}
            onCancel={() => void ctl.cancelPending(q.requestId)}
            onEdit={() => void ctl.editPending(q.requestId)}
            onRetry={() => {
              ctl.dismissPending(q.requestId);
              void ctl.submit(q.text);
            }}
          />
        ))}
    </>
  );
}
