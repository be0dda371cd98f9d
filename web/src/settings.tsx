/**
 * The settings panel (theme, API key, the open session's system prompt, what new sessions start with) and the keyboard shortcuts'
 * help overlay. Both are modal dialogs: focus moves in when they open and back when they close.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import type { AppController } from "./controller.js";
import { trapTab } from "./focus-trap.js";
import { ApprovalSettings } from "./approvals-settings.js";

export type Theme = "system" | "light" | "dark";
const THEME_KEY = "tether.theme";

export function storedTheme(storage: Storage): Theme {
  const t = storage.getItem(THEME_KEY);
  return t === "light" || t === "dark" ? t : "system";
}

/** Applies a theme to the page (`system` follows the OS: the stylesheet's media query). */
export function applyTheme(theme: Theme): void {
  if (theme === "system") delete document.documentElement.dataset["theme"];
  else document.documentElement.dataset["theme"] = theme;
}

/** Focus goes into the dialog when it opens and back to where it was when it closes. */
function useDialogFocus(first: { current: HTMLElement | null }): void {
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    first.current?.focus();
    return () => before?.focus?.();
  }, []);
}

export function SettingsDialog({ ctl, onClose }: { ctl: AppController; onClose(): void }) {
  const [theme, setTheme] = useState<Theme>(storedTheme(window.localStorage));
  const [key, setKey] = useState("");
  const [prompt, setPrompt] = useState(ctl.newSessionPrompt);
  const firstRef = useRef<HTMLInputElement>(null);
  useDialogFocus(firstRef);
  const pick = (t: Theme) => {
    setTheme(t);
    window.localStorage.setItem(THEME_KEY, t);
    applyTheme(t);
  };
  return (
    <div class="modal-scrim" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <div class="modal settings" role="dialog" aria-modal="true" onKeyDown={trapTab} aria-labelledby="settings-title">
        <h2 id="settings-title">Settings</h2>
        <fieldset class="settings-group">
          <legend>Theme</legend>
          {(["system", "light", "dark"] as const).map((t, n) => (
            <label key={t} class="radio">
              <input ref={n === 0 ? firstRef : undefined} type="radio" name="theme" value={t} checked={theme === t} onChange={() => pick(t)} />
              {t === "system" ? "System" : t === "light" ? "Light" : "Dark"}
            </label>
          ))}
        </fieldset>
        <fieldset class="settings-group">
          <legend>API key</legend>
          <p class="settings-note">{ctl.token ? "A key is kept in this browser." : "No key is kept in this browser (this gateway may need none)."}</p>
          <div class="settings-row">
            <input type="password" autocomplete="off" aria-label="New API key" placeholder="New API key" value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
            <button
              type="button"
              class="btn btn-sm btn-primary"
              disabled={!key.trim()}
              onClick={() => {
                onClose();
                void ctl.setToken(key);
              }}
            >
              Use this key
            </button>
            {ctl.token && (
              <button
                type="button"
                class="btn btn-sm btn-danger"
                onClick={() => {
                  onClose();
                  ctl.forgetToken();
                }}
              >
                Forget the key
              </button>
            )}
          </div>
        </fieldset>
        {ctl.current && <SessionSettings ctl={ctl} />}
        <ApprovalSettings ctl={ctl} />
        <fieldset class="settings-group">
          <legend>New sessions</legend>
          <label for="settings-prompt">System prompt (empty: the profile's)</label>
          <textarea id="settings-prompt" rows={2} value={prompt} onInput={(e) => setPrompt((e.target as HTMLTextAreaElement).value)} />
          <p class="settings-note">This page creates sessions in the default profile.</p>
        </fieldset>
        <div class="modal-actions">
          <button
            type="button"
            class="btn btn-primary"
            onClick={() => {
              ctl.setNewSessionPrompt(prompt);
              onClose();
            }}
          >
            Done
          </button>
        </div>
      </div>
    </div>
  );
}

/**
 * The open session's own settings, where the gateway allows: its system prompt (`session.update`,
 * from the next reply on; refused for a session whose prompt is its profile's) — and its profile,
 * shown but fixed (each profile keeps its own store, so a session cannot move).
 */
function SessionSettings({ ctl }: { ctl: AppController }) {
  const m = ctl.current!;
  const [prompt, setPrompt] = useState(m.systemPrompt ?? "");
  const ended = m.state === "ended";
  const fixed = m.systemPromptFixed === true;
  return (
    <fieldset class="settings-group" data-testid="session-settings">
      <legend>This session</legend>
      <p class="settings-note">
        Profile <strong>{m.profile}</strong> (fixed: each profile keeps its own store)
      </p>
      <label for="session-prompt">This session's system prompt (empty: the profile's)</label>
      <textarea
        id="session-prompt"
        rows={2}
        value={prompt}
        disabled={fixed || ended}
        onInput={(e) => setPrompt((e.target as HTMLTextAreaElement).value)}
      />
      {fixed ? (
        <p class="settings-note">This session follows its profile's configuration: its system prompt is the profile's.</p>
      ) : ended ? (
        <p class="settings-note">The session has ended: reopen it to change its system prompt.</p>
      ) : (
        <div class="settings-row">
          <button type="button" class="btn btn-sm btn-primary" disabled={prompt.trim() === (m.systemPrompt ?? "")} onClick={() => void ctl.setSessionPrompt(prompt)}>
            Save for this session
          </button>
          <span class="settings-note">Used from the next reply on.</span>
        </div>
      )}
    </fieldset>
  );
}

export const SHORTCUTS: Array<[string, string]> = [
  ["Ctrl+K or /", "Search sessions"],
  ["Ctrl+Shift+O", "New session"],
  ["Shift+Esc", "Focus the message box"],
  ["Enter / Shift+Enter", "Send / new line"],
  ["Esc", "Stop the reply, or close a dialog"],
  ["?", "This list"],
];

export function HelpDialog({ onClose }: { onClose(): void }) {
  const ok = useRef<HTMLButtonElement>(null);
  useDialogFocus(ok);
  return (
    <div class="modal-scrim" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <div class="modal" role="dialog" aria-modal="true" onKeyDown={trapTab} aria-labelledby="help-title">
        <h2 id="help-title">Keyboard shortcuts</h2>
        <dl class="shortcuts">
          {SHORTCUTS.map(([keys, what]) => (
            <div key={keys}>
              <dt>
                <kbd>{keys}</kbd>
              </dt>
              <dd>{what}</dd>
            </div>
          ))}
        </dl>
        <div class="modal-actions">
          <button type="button" class="btn btn-primary" ref={ok} onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
