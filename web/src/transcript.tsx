/**
 * The transcript's messages, exchange by exchange (versions.ts). The gateway branches: any exchange
 * of the active branch can be regenerated or edited (a new version of its prompt, the old branch
 * kept), and a prompt with several versions shows "‹ n / N ›" to switch — a durable change every
 * browser sees. Continue is offered on the newest exchange only (it follows the last reply).
 */
import { Fragment } from "preact";
import { BlockView, PendingView, type BlockActions, type ExchangeActions } from "./blocks.js";
import type { AppController } from "./controller.js";
import type { SessionModel } from "./model.js";
import { exchanges, versionOf, type Exchange, type VersionPlace } from "./versions.js";
import { VIRTUAL_FROM, VirtualList } from "./virtual-list.js";

/** The words a Continue sends: the model picks up its interrupted reply. */
export const CONTINUE_TEXT = "Continue exactly where your previous reply stopped.";

function exchangeActions(ctl: AppController, model: SessionModel, ex: Exchange, latest: boolean): ExchangeActions {
  if (!ex.key || model.running || model.state === "ended") return {};
  if (model.pending.some((q) => q.replaces && q.status !== "failed")) return {};
  return {
    regenerate: () => void ctl.regenerate(ex.key),
    edit: (text) => void ctl.regenerate(ex.key, text),
    ...(latest ? { resume: () => void ctl.submit(CONTINUE_TEXT) } : {}),
  };
}

function VersionSwitch({ place, busy, onChoose }: { place: VersionPlace; busy: boolean; onChoose(messageId: string): void }) {
  return (
    <div class="versions" role="group" aria-label="Versions" data-testid="versions">
      <button
        type="button"
        class="msg-action"
        aria-label="Previous version"
        disabled={busy || !place.previous}
        onClick={() => place.previous && onChoose(place.previous)}
      >
        ‹
      </button>
      <span class="versions-count">
        {place.n} / {place.of}
      </span>
      <button type="button" class="msg-action" aria-label="Next version" disabled={busy || !place.next} onClick={() => place.next && onChoose(place.next)}>
        ›
      </button>
    </div>
  );
}

/**
 * `scroller`: the transcript's scrolling element; a session of VIRTUAL_FROM exchanges or more is
 * virtualised in it (virtual-list.tsx), a shorter one renders flat.
 */
export function ExchangeList({
  ctl,
  model,
  actions,
  scroller,
}: {
  ctl: AppController;
  model: SessionModel;
  actions: BlockActions;
  scroller?: { current: HTMLElement | null };
}) {
  const shown = exchanges(model.blocks);
  const last = shown[shown.length - 1];
  // Switching needs the session idle (the gateway refuses it while a turn runs).
  const busy = model.running || model.state === "ended" || ctl.linkDown;
  const renderExchange = (ex: Exchange) => {
        const place = versionOf(ex);
        const all = exchangeActions(ctl, model, ex, ex === last);
        // A version a newer one replaced: its Regenerate is used up (Edit still starts another version).
        const ea = place?.next ? { ...(all.edit ? { edit: all.edit } : {}) } : all;
        const regenerating = model.pending.some((q) => q.replaces === ex.key && q.status !== "failed");
        let reply = -1;
        ex.blocks.forEach((b, n) => {
          if (b.kind === "assistant" || b.kind === "error") reply = n;
        });
        return (
          // Flat in the transcript (no wrapper): each block stays a direct child of the transcript.
          <Fragment key={ex.key || "start"}>
            {ex.blocks.map((b, n) => (
              <Fragment key={b.key}>
                <BlockView block={b} actions={actions} ex={b.kind === "user" ? { ...(ea.edit ? { edit: ea.edit } : {}) } : n === reply ? ea : {}} />
                {n === 0 && place && <VersionSwitch place={place} busy={busy} onChoose={(id) => void ctl.selectVersion(id)} />}
              </Fragment>
            ))}
            {regenerating && (
              <div class="notice notice-info" role="status">
                Regenerating…
              </div>
            )}
          </Fragment>
        );
  };
  return (
    <>
      {shown.length >= VIRTUAL_FROM && scroller ? (
        <VirtualList scroller={scroller} count={shown.length} keyOf={(i) => shown[i]!.key || "start"} render={(i) => renderExchange(shown[i]!)} />
      ) : (
        shown.map(renderExchange)
      )}
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
              // A failed regenerate or edit tries the same branch again, not a plain prompt.
              void (q.replaces ? ctl.regenerate(q.replaces, q.text) : ctl.submit(q.text));
            }}
          />
        ))}
    </>
  );
}
