/** The page: top bar, sessions sidebar, transcript + composer, todo panel, dialogs. */
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import type { SessionSummary } from "../../src/protocol/index.js";
import { isRecoverableEnd } from "../../src/protocol/end-reasons.js";
import { BlockView, PendingView, type BlockActions } from "./blocks.js";
import type { AppController } from "./controller.js";
import type { SessionModel } from "./model.js";

function useController(ctl: AppController): void {
  const [, setTick] = useState(0);
  useEffect(() => ctl.subscribe(() => setTick((t) => t + 1)), [ctl]);
}

export function relativeTime(ms: number, now = Date.now()): string {
  const s = Math.round((now - ms) / 1000);
  if (s < 45) return "just now";
  if (s < 3600) return `${Math.max(1, Math.round(s / 60))} min ago`;
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`;
  if (s < 172_800) return "yesterday";
  return new Date(ms).toLocaleDateString();
}

async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    return ok;
  }
}

export function App({ ctl }: { ctl: AppController }) {
  useController(ctl);
  const [navOpen, setNavOpen] = useState(false);
  const modelSelect = useRef<HTMLSelectElement>(null);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") {
        if (ctl.confirm) ctl.cancelConfirm();
        else if (navOpen) setNavOpen(false);
        else if (ctl.current?.running) void ctl.interrupt();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [ctl, navOpen]);

  if (ctl.needsKey) return <KeyScreen ctl={ctl} />;

  const m = ctl.current;
  const actions: BlockActions = {
    retry: (text) => void ctl.submit(text),
    switchModel: () => modelSelect.current?.focus(),
    copy: copyText,
  };
  return (
    <div class={`shell ${navOpen ? "nav-open" : ""}`}>
      <header class="topbar">
        <button type="button" class="icon-btn only-phone" aria-label="Sessions" aria-expanded={navOpen} onClick={() => setNavOpen(!navOpen)}>
          ☰
        </button>
        <div class="brand">
          <span class="logo" aria-hidden="true" />
          <span>Tether</span>
        </div>
        <div class="topbar-title" title={m?.title || undefined}>
          {m ? m.title || "Untitled session" : ""}
        </div>
        {m && <ModelSwitcher ctl={ctl} model={m} selectRef={modelSelect} />}
        <ConnectionIndicator ctl={ctl} />
      </header>
      <div class="body">
        <Sidebar ctl={ctl} onPick={() => setNavOpen(false)} />
        <div class="scrim only-phone" onClick={() => setNavOpen(false)} />
        <main class="chat" aria-label="Chat">
          {m ? (
            <ChatView ctl={ctl} model={m} actions={actions} />
          ) : ctl.sessionError ? (
            <div class="empty">
              <h2>Cannot open this session</h2>
              <p>{ctl.sessionError}</p>
              <button type="button" class="btn btn-primary" onClick={() => void ctl.newSession()}>
                New session
              </button>
            </div>
          ) : ctl.loading ? (
            <div class="empty">
              <div class="spinner" aria-label="Loading" />
            </div>
          ) : (
            <Welcome ctl={ctl} />
          )}
        </main>
        {m && m.todo.items.length > 0 && <TodoPanel model={m} />}
      </div>
      {ctl.confirm && <ConfirmDialog ctl={ctl} />}
      <div class="toasts" role="status" aria-live="polite">
        {ctl.toasts.map((t) => (
          <div key={t.id} class={`toast toast-${t.tone}`}>
            {t.text}
          </div>
        ))}
      </div>
    </div>
  );
}

function KeyScreen({ ctl }: { ctl: AppController }) {
  const [key, setKey] = useState("");
  return (
    <div class="key-screen">
      <form
        class="key-card"
        onSubmit={(e) => {
          e.preventDefault();
          void ctl.setToken(key);
        }}
      >
        <div class="brand brand-lg">
          <span class="logo" aria-hidden="true" />
          <span>Tether</span>
        </div>
        <p>This gateway needs an API key. It is kept in this browser only.</p>
        <label for="api-key">API key</label>
        <input id="api-key" type="password" autocomplete="off" value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} autoFocus />
        {ctl.keyError && (
          <div class="form-error" role="alert">
            {ctl.keyError}
          </div>
        )}
        <button type="submit" class="btn btn-primary" disabled={!key.trim()}>
          Connect
        </button>
      </form>
    </div>
  );
}

function ConnectionIndicator({ ctl }: { ctl: AppController }) {
  const s = ctl.status;
  let label: string;
  let state: string = s.state;
  switch (s.state) {
    case "connected":
      label = "Connected";
      break;
    case "catching_up":
      label = "Catching up…";
      break;
    case "reconnecting":
      label = `Reconnecting…${s.attempt > 1 ? ` (try ${s.attempt})` : ""}`;
      break;
    case "connecting":
      label = s.attempt > 0 ? "Reconnecting…" : "Connecting…";
      if (s.attempt > 0) state = "reconnecting";
      break;
    default:
      label = "Offline";
  }
  const title = s.state === "reconnecting" ? s.reason : s.state === "connected" ? `epoch ${s.epoch}` : undefined;
  return (
    <div class="conn" data-state={state} role="status" aria-live="polite" title={title} data-testid="connection">
      <span class="conn-dot" aria-hidden="true" />
      <span class="conn-label">{label}</span>
    </div>
  );
}

function ModelSwitcher({ ctl, model, selectRef }: { ctl: AppController; model: SessionModel; selectRef: { current: HTMLSelectElement | null } }) {
  const options = ctl.models.some((o) => o.id === model.model) ? ctl.models : [{ id: model.model, provider: model.provider }, ...ctl.models];
  const shown = model.pendingModel ?? model.model;
  return (
    <div class="model-switch">
      <label class="sr-only" for="model-select">
        Model
      </label>
      <select
        id="model-select"
        ref={selectRef}
        value={shown}
        disabled={model.state === "ended"}
        onChange={(e) => {
          const v = (e.target as HTMLSelectElement).value;
          (e.target as HTMLSelectElement).value = shown; // stays until the gateway says so
          if (v !== shown) void ctl.switchModel(v);
        }}
      >
        {options.map((o) => (
          <option key={o.id} value={o.id}>
            {o.id}
          </option>
        ))}
      </select>
      {model.pendingModel && (
        <span class="badge badge-queued" data-testid="model-pending" title={`Now: ${model.model}`}>
          pending
        </span>
      )}
    </div>
  );
}

function stateLabel(s: SessionSummary): string {
  // idle: the gateway ended it for a recoverable reason; opening it resumes it as it was.
  if (s.state === "idle") return "idle · resumes on open";
  if (s.state !== "ended") return s.state;
  return `ended · ${(s.end_reason ?? "").replace(/_/g, " ")}`;
}

function Sidebar({ ctl, onPick }: { ctl: AppController; onPick(): void }) {
  return (
    <nav class="sidebar" aria-label="Sessions">
      <div class="sidebar-head">
        <button type="button" class="btn btn-primary btn-block" onClick={() => void ctl.newSession().then(onPick)}>
          + New session
        </button>
      </div>
      <ul class="session-list">
        {ctl.sessions.length === 0 && <li class="session-empty">No sessions yet</li>}
        {ctl.sessions.map((s) => (
          <SessionItem key={s.session_id} ctl={ctl} s={s} active={s.session_id === ctl.currentId} onPick={onPick} />
        ))}
      </ul>
    </nav>
  );
}

function SessionItem({ ctl, s, active, onPick }: { ctl: AppController; s: SessionSummary; active: boolean; onPick(): void }) {
  const [editing, setEditing] = useState(false);
  const [title, setTitle] = useState(s.title);
  const [confirmClose, setConfirmClose] = useState(false);
  const name = s.title || "Untitled session";
  const canReopen = s.state === "ended" && s.end_reason !== "compression";
  return (
    <li class={`session ${active ? "active" : ""}`} data-state={s.state} data-session-id={s.session_id}>
      {editing ? (
        <form
          class="rename"
          onSubmit={(e) => {
            e.preventDefault();
            setEditing(false);
            void ctl.rename(s.session_id, title.trim());
          }}
        >
          <input
            aria-label="Session title"
            value={title}
            onInput={(e) => setTitle((e.target as HTMLInputElement).value)}
            onKeyDown={(e) => {
              if (e.key === "Escape") {
                e.stopPropagation();
                setEditing(false);
              }
            }}
            autoFocus
          />
          <button type="submit" class="btn btn-sm btn-primary">
            Save
          </button>
        </form>
      ) : (
        <button
          type="button"
          class="session-main"
          aria-current={active ? "true" : undefined}
          onClick={() => {
            ctl.navigate(s.session_id);
            onPick();
          }}
        >
          <span class="session-title">{name}</span>
          <span class="session-meta">
            <span class={`state state-${s.state}`}>{stateLabel(s)}</span>
            <span>{s.model}</span>
            <span>{relativeTime(s.last_activity_at)}</span>
          </span>
        </button>
      )}
      {!editing && (
        <div class="session-actions">
          {confirmClose ? (
            <>
              <button type="button" class="btn btn-sm btn-danger" onClick={() => void ctl.close(s.session_id).then(() => setConfirmClose(false))}>
                Close it
              </button>
              <button type="button" class="btn btn-sm" onClick={() => setConfirmClose(false)}>
                Keep
              </button>
            </>
          ) : (
            <>
              <button
                type="button"
                class="icon-btn"
                aria-label={`Rename ${name}`}
                title="Rename"
                onClick={() => {
                  setTitle(s.title);
                  setEditing(true);
                }}
              >
                ✎
              </button>
              {canReopen ? (
                <button
                  type="button"
                  class="btn btn-sm"
                  aria-label={`Reopen ${name}`}
                  title={isRecoverableEnd(s.end_reason) ? "Resume where it stopped" : "Reopen the closed session"}
                  onClick={() => void ctl.reopen(s.session_id)}
                >
                  Reopen
                </button>
              ) : s.state !== "ended" ? (
                <button type="button" class="icon-btn" aria-label={`Close ${name}`} title="Close" onClick={() => setConfirmClose(true)}>
                  ✕
                </button>
              ) : null}
            </>
          )}
        </div>
      )}
    </li>
  );
}

function Welcome({ ctl }: { ctl: AppController }) {
  return (
    <div class="empty welcome">
      <div class="logo logo-xl" aria-hidden="true" />
      <h1>Sessions that survive the network</h1>
      <p>
        Every reply streams live, and a dropped connection or a gateway restart never loses or repeats a word: the transcript catches up
        exactly where it stopped.
      </p>
      <button type="button" class="btn btn-primary" onClick={() => void ctl.newSession()}>
        Start a session
      </button>
    </div>
  );
}

function ChatView({ ctl, model, actions }: { ctl: AppController; model: SessionModel; actions: BlockActions }) {
  const scroller = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  useLayoutEffect(() => {
    const el = scroller.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  });
  const ended = model.state === "ended";
  const recoverable = isRecoverableEnd(model.endReason);
  return (
    <>
      <div
        class="transcript"
        ref={scroller}
        role="log"
        aria-label="Transcript"
        aria-live="polite"
        onScroll={(e) => {
          const el = e.currentTarget as HTMLDivElement;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
        }}
      >
        <div class="transcript-inner">
          {model.blocks.length === 0 && model.pending.length === 0 && (
            <div class="hint">
              <p>Send a message to start. The demo model understands:</p>
              <ul>
                <li>
                  <code>count to 20</code> — a streamed reply
                </li>
                <li>
                  <code>todo: plan; build; ship</code> — a tool call and the todo panel
                </li>
                <li>
                  <code>fail: provider/rate_limited</code> — an error card
                </li>
                <li>
                  <code>delegate: write a haiku; check the spelling</code> — background sub-agents
                </li>
              </ul>
            </div>
          )}
          {model.blocks.map((b) => (
            <BlockView key={b.key} block={b} actions={actions} />
          ))}
          {model.pending.map((q) => (
            <PendingView
              key={q.requestId}
              prompt={q}
              onDismiss={() => ctl.dismissPending(q.requestId)}
              onRetry={() => {
                ctl.dismissPending(q.requestId);
                void ctl.submit(q.text);
              }}
            />
          ))}
        </div>
      </div>
      {ended ? (
        <div class="ended-bar" role="status">
          <span>
            This session ended{model.endReason ? ` (${model.endReason.replace(/_/g, " ")})` : ""}.
          </span>
          {model.endReason !== "compression" && (
            <button type="button" class="btn btn-primary btn-sm" onClick={() => void ctl.reopen(model.sessionId)}>
              {recoverable ? "Resume" : "Reopen"}
            </button>
          )}
        </div>
      ) : (
        <Composer ctl={ctl} model={model} />
      )}
    </>
  );
}

function Composer({ ctl, model }: { ctl: AppController; model: SessionModel }) {
  const [text, setText] = useState("");
  const area = useRef<HTMLTextAreaElement>(null);
  useEffect(() => area.current?.focus(), [model.sessionId]);
  useLayoutEffect(() => {
    const el = area.current;
    if (!el) return;
    el.style.height = "auto";
    el.style.height = `${Math.min(el.scrollHeight, 200)}px`;
  }, [text]);
  const send = () => {
    const t = text.trim();
    if (!t) return;
    setText("");
    void ctl.submit(t);
  };
  return (
    <form
      class="composer"
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
    >
      <label class="sr-only" for="composer-input">
        Message
      </label>
      <textarea
        id="composer-input"
        ref={area}
        rows={1}
        placeholder={model.running ? "Type to queue a follow-up…" : "Message Tether…"}
        value={text}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
            e.preventDefault();
            send();
          }
        }}
      />
      <div class="composer-actions">
        {model.running && (
          <button type="button" class="btn btn-stop" onClick={() => void ctl.interrupt()} aria-label="Interrupt (Esc)" title="Interrupt (Esc)">
            <span class="stop-square" aria-hidden="true" /> Stop
          </button>
        )}
        <button type="submit" class="btn btn-primary" disabled={!text.trim()} aria-label="Send (Enter)" title="Send (Enter)">
          Send
        </button>
      </div>
      <div class="composer-hint" aria-hidden="true">
        Enter to send · Shift+Enter for a new line · Esc to interrupt
      </div>
    </form>
  );
}

function TodoPanel({ model }: { model: SessionModel }) {
  const done = model.todo.items.filter((i) => i.status === "completed").length;
  return (
    <aside class="todo" aria-label="Todo list" data-revision={model.todo.revision}>
      <div class="todo-head">
        <span>Todo</span>
        <span class="todo-count">
          {done}/{model.todo.items.length}
        </span>
      </div>
      <ol class="todo-list">
        {model.todo.items.map((item, n) => (
          <li key={n} class={`todo-item todo-${item.status}`}>
            <span class="todo-box" aria-hidden="true">
              {item.status === "completed" ? "✓" : item.status === "in_progress" ? "◐" : ""}
            </span>
            <span class="todo-text">{item.content}</span>
            <span class="sr-only">({item.status.replace("_", " ")})</span>
          </li>
        ))}
      </ol>
    </aside>
  );
}

function ConfirmDialog({ ctl }: { ctl: AppController }) {
  const c = ctl.confirm!;
  const ok = useRef<HTMLButtonElement>(null);
  useEffect(() => ok.current?.focus(), []);
  return (
    <div class="modal-scrim">
      <div class="modal" role="alertdialog" aria-modal="true" aria-labelledby="confirm-title" aria-describedby="confirm-text">
        <h2 id="confirm-title">Switch to {c.model}?</h2>
        <p id="confirm-text">{c.message}</p>
        <div class="modal-actions">
          <button type="button" class="btn" onClick={() => ctl.cancelConfirm()}>
            Cancel
          </button>
          <button type="button" class="btn btn-primary" ref={ok} onClick={() => void ctl.switchModel(c.model, true)}>
            Switch to {c.model}
          </button>
        </div>
      </div>
    </div>
  );
}
