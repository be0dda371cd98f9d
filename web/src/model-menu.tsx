/**
 * The model menu: a button naming the session's model, opening a list grouped by provider with a
 * lock on models that need confirmation (the gateway still asks: the lock says so beforehand).
 * Opened from the top bar or by an error card's "Switch model"; arrows move, Enter picks, Esc closes.
 */
import { Icon } from "./icons.js";
import { useLayoutEffect, useRef } from "preact/hooks";
import type { AppController, ModelOption } from "./controller.js";
import type { SessionModel } from "./model.js";

function byProvider(options: ModelOption[]): Array<{ provider: string; models: ModelOption[] }> {
  const out: Array<{ provider: string; models: ModelOption[] }> = [];
  for (const o of options) {
    const g = out.find((x) => x.provider === o.provider);
    if (g) g.models.push(o);
    else out.push({ provider: o.provider, models: [o] });
  }
  return out;
}

export function ModelMenu({ ctl, model, open, setOpen }: { ctl: AppController; model: Pick<SessionModel, "model" | "provider" | "pendingModel"> & { state?: SessionModel["state"] }; open: boolean; setOpen(open: boolean): void }) {
  const button = useRef<HTMLButtonElement>(null);
  const list = useRef<HTMLDivElement>(null);
  const options = ctl.models.some((o) => o.id === model.model) ? ctl.models : [{ id: model.model, provider: model.provider || "current" }, ...ctl.models];
  const shown = model.pendingModel ?? model.model;
  // A layout effect: the focus and the listeners are in place before the open menu is painted, so
  // no key pressed once it shows can miss them.
  useLayoutEffect(() => {
    if (!open) return;
    const current = list.current?.querySelector<HTMLElement>('[aria-selected="true"]') ?? list.current?.querySelector<HTMLElement>('[role="option"]');
    current?.focus();
    const away = (e: MouseEvent) => {
      const t = e.target as Node;
      if (!list.current?.contains(t) && !button.current?.contains(t)) setOpen(false);
    };
    // Escape closes the open menu wherever the focus is (pressed before the focus reached an
    // option, it used to go to the page and could stop the running reply instead).
    const escape = (e: KeyboardEvent) => {
      if (e.key !== "Escape" || e.shiftKey) return;
      e.preventDefault();
      e.stopPropagation();
      close();
    };
    document.addEventListener("mousedown", away);
    document.addEventListener("keydown", escape, true);
    return () => {
      document.removeEventListener("mousedown", away);
      document.removeEventListener("keydown", escape, true);
    };
  }, [open]);
  const close = () => {
    setOpen(false);
    button.current?.focus();
  };
  const pick = (id: string) => {
    close();
    if (id !== shown) void ctl.switchModel(id);
  };
  const onKey = (e: KeyboardEvent) => {
    const items = [...(list.current?.querySelectorAll<HTMLElement>('[role="option"]') ?? [])];
    const at = items.indexOf(document.activeElement as HTMLElement);
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      const next = items[(at + (e.key === "ArrowDown" ? 1 : items.length - 1)) % items.length];
      next?.focus();
    }
  };
  return (
    <div class="model-switch">
      <button
        type="button"
        ref={button}
        class="model-button"
        data-testid="model-button"
        data-model={shown}
        aria-haspopup="listbox"
        aria-expanded={open}
        aria-label={`Model: ${shown}`}
        disabled={model.state === "ended"}
        onClick={() => setOpen(!open)}
      >
        <span class="model-name">{shown}</span>
        {ctl.guarded.has(shown) && <Icon name="lock" size={14} />}
        <span class="model-caret" aria-hidden="true">
          <Icon name="caret" size={14} />
        </span>
      </button>
      {model.pendingModel && (
        <span class="badge badge-queued" data-testid="model-pending" title={`Now: ${model.model}`}>
          pending
        </span>
      )}
      {open && (
        <div class="model-menu" ref={list} role="listbox" aria-label="Models" onKeyDown={onKey}>
          {byProvider(options).map((g) => (
            <div key={g.provider} role="group" aria-label={g.provider} class="model-group">
              <div class="model-group-head" aria-hidden="true">
                {g.provider}
              </div>
              {g.models.map((o) => {
                const locked = ctl.guarded.has(o.id);
                return (
                  <div
                    key={o.id}
                    role="option"
                    tabIndex={-1}
                    class="model-option"
                    aria-selected={o.id === shown}
                    data-model={o.id}
                    aria-label={locked ? `${o.id} (asks for confirmation)` : o.id}
                    onClick={() => pick(o.id)}
                    onKeyDown={(e) => {
                      if (e.key === "Enter" || e.key === " ") {
                        e.preventDefault();
                        pick(o.id);
                      }
                    }}
                  >
                    <span>{o.id}</span>
                    {locked && (
                      <span class="model-lock" title="Asks for confirmation before switching" aria-hidden="true">
                        <Icon name="lock" size={14} />
                      </span>
                    )}
                    {o.id === shown && (
                      <span class="model-check" aria-hidden="true">
                        <Icon name="check" size={14} />
                      </span>
                    )}
                  </div>
                );
              })}
            </div>
          ))}
        </div>
      )}
    </div>
  );
}
