/**
 * The transcript's messages, exchange by exchange (versions.ts). The gateway branches: any exchange
 * of the active branch can be regenerated or edited (a new version of its prompt, the old branch
 * kept), and a prompt with several versions shows "‹ n / N ›" to switch — a durable change every
 * browser sees. Continue is offered on the newest exchange only (it follows the last reply).
 */
import { Icon } from "./icons.js";
import { Component, Fragment } from "preact";
import { BlockView, type BlockActions, type ExchangeActions, type ReplyJoin } from "./blocks.js";
import { PendingView } from "./pending.js";
import type { AppController } from "./controller.js";
import type { Block, SessionModel } from "./model.js";
import { exchanges, versionOf, type Exchange, type VersionPlace } from "./versions.js";
import { VIRTUAL_FROM, VirtualList } from "./virtual-list.js";
import { exchangeStamp, sameStamp, type Stamp } from "./exchange-stamp.js";

function exchangeActions(ctl: AppController, model: SessionModel, ex: Exchange, latest: boolean): ExchangeActions {
  if (!ex.key || model.running || model.state === "ended") return {};
  if (model.pending.some((q) => q.replaces && q.status !== "failed")) return {};
  return {
    regenerate: () => void ctl.regenerate(ex.key),
    edit: (text) => void ctl.regenerate(ex.key, text),
    // No prompt of the user's: the reply goes on in this exchange (prompt.submit { continue: true }).
    ...(latest ? { resume: () => void ctl.continueReply() } : {}),
  };
}

/**
 * How the blocks of one exchange join: an assistant message right after another is a Continue's
 * (nothing else writes two in a row — tools, prompts and steering come between), so the last of
 * them shows them all, as one message.
 */
function joins(blocks: readonly Block[]): (ReplyJoin | undefined)[] {
  const out: (ReplyJoin | undefined)[] = blocks.map(() => undefined);
  let runText = "";
  blocks.forEach((b, n) => {
    if (b.kind !== "assistant") return;
    const prev = blocks[n - 1];
    const next = blocks[n + 1];
    const after = prev?.kind === "assistant";
    runText = after ? runText + b.text : b.text;
    const before = next?.kind === "assistant";
    if (after || before) out[n] = { after, before, ...(after ? { text: runText } : {}) };
  });
  return out;
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
        <Icon name="prev" size={14} />
      </button>
      <span class="versions-count">
        {place.n} / {place.of}
      </span>
      <button type="button" class="msg-action" aria-label="Next version" disabled={busy || !place.next} onClick={() => place.next && onChoose(place.next)}>
        <Icon name="next" size={14} />
      </button>
    </div>
  );
}

/**
 * The exchanges of a model's blocks, grouped again only when blocks were added or removed (the
 * array, its length or its last block changed): the reducer changes blocks in place, so on a
 * streamed frame 2,000 blocks are not walked again. The stamps say what changed inside.
 */
const grouped = new WeakMap<readonly Block[], { length: number; last: Block | undefined; shown: Exchange[] }>();
function exchangesOf(blocks: Block[]): Exchange[] {
  const hit = grouped.get(blocks);
  if (hit && hit.length === blocks.length && hit.last === blocks[blocks.length - 1]) return hit.shown;
  const shown = exchanges(blocks);
  grouped.set(blocks, { length: blocks.length, last: blocks[blocks.length - 1], shown });
  return shown;
}

const keyFns = new WeakMap<Exchange[], (i: number) => string>();
/** The virtualiser's key function for these exchanges: one per grouping, so its options stay put. */
function keyOfShown(shown: Exchange[]): (i: number) => string {
  let f = keyFns.get(shown);
  if (!f) keyFns.set(shown, (f = (i) => shown[i]!.key || "start"));
  return f;
}

interface ExchangeProps {
  ex: Exchange;
  /** What the exchange shows, read at this render (exchange-stamp.ts). */
  stamp: Stamp;
  /** The state around it that changes what it offers (busy, actions, regenerating, paused). */
  flags: string;
  ctl: AppController;
  actions: BlockActions;
  ea: ExchangeActions;
  busy: boolean;
  regenerating: boolean;
}

/**
 * One exchange. It renders again only when its stamp or flags change: a reply streaming into the
 * newest exchange does not render the finished ones above it on every frame (#33). The callbacks
 * it is given are the controller's (the same behind every render), so skipping one loses nothing.
 */
class ExchangeView extends Component<ExchangeProps> {
  override shouldComponentUpdate(next: ExchangeProps): boolean {
    return next.ex.key !== this.props.ex.key || next.flags !== this.props.flags || !sameStamp(next.stamp, this.props.stamp);
  }

  override render() {
    const { ex, ctl, actions, ea, busy, regenerating } = this.props;
    const place = versionOf(ex);
    const joined = joins(ex.blocks);
    let reply = -1;
    ex.blocks.forEach((b, n) => {
      if (b.kind === "assistant" || b.kind === "error") reply = n;
    });
    return (
      // Flat in the transcript (no wrapper): each block stays a direct child of the transcript.
      <Fragment>
        {ex.blocks.map((b, n) => (
          <Fragment key={b.key}>
            <BlockView
              block={b}
              actions={actions}
              ex={b.kind === "user" ? { ...(ea.edit ? { edit: ea.edit } : {}) } : n === reply ? ea : {}}
              {...(joined[n] ? { join: joined[n] } : {})}
            />
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
  }
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
  const shown = exchangesOf(model.blocks);
  const last = shown[shown.length - 1];
  // Switching needs the session idle (the gateway refuses it while a turn runs).
  const busy = model.running || model.state === "ended" || ctl.linkDown;
  const renderExchange = (ex: Exchange) => {
    const all = exchangeActions(ctl, model, ex, ex === last);
    // A version a newer one replaced: its Regenerate is used up (Edit still starts another version).
    const ea = versionOf(ex)?.next ? { ...(all.edit ? { edit: all.edit } : {}) } : all;
    const regenerating = model.pending.some((q) => q.replaces === ex.key && q.status !== "failed");
    const flags = `${busy} ${regenerating} ${actions.paused} ${Object.keys(ea).join()}`;
    return (
      <ExchangeView
        key={ex.key || "start"}
        ex={ex}
        stamp={exchangeStamp(ex.blocks, model.usage)}
        flags={flags}
        ctl={ctl}
        actions={actions}
        ea={ea}
        busy={busy}
        regenerating={regenerating}
      />
    );
  };
  return (
    <>
      {shown.length >= VIRTUAL_FROM && scroller ? (
        <VirtualList scroller={scroller} count={shown.length} keyOf={keyOfShown(shown)} render={(i) => renderExchange(shown[i]!)} />
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
            actions={{
              onDismiss: () => ctl.dismissPending(q.requestId),
              onCancel: () => void ctl.cancelPending(q.requestId),
              onSave: (text) => void ctl.editQueued(q.requestId, text),
              onRetry: () => {
                ctl.dismissPending(q.requestId);
                // A failed regenerate or edit tries the same branch again, not a plain prompt; a continue, a continue.
                void (q.continues ? ctl.continueReply() : q.replaces ? ctl.regenerate(q.replaces, q.text) : ctl.submit(q.text));
              },
            }}
          />
        ))}
    </>
  );
}
