/** The page: top bar, sessions sidebar, transcript + composer, todo panel, dialogs. */
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import type { OpenRequest } from "../../src/protocol/index.js";
import { isRecoverableEnd } from "../../src/protocol/end-reasons.js";
import type { BlockActions } from "./blocks.js";
import type { AppController } from "./controller.js";
import { endedSentence } from "./labels.js";
import type { SessionModel } from "./model.js";
import { ModelMenu } from "./model-menu.js";
import { FolderPicker } from "./folders.js";
import { HelpDialog, SettingsDialog } from "./settings.js";
import { Sidebar } from "./sidebar.js";
import { visibleText } from "./visible-text.js";
import { ContextMeter, JumpToLatest, SuggestionChips } from "./chat-extras.js";
import { ExchangeList } from "./transcript.js";
import { ProcessPanel } from "./processes.js";
import { isBrowserTool } from "./browser-tools.js";
import { Icon } from "./icons.js";
import { ToolArgs } from "./tool-args.js";
import { trapTab } from "./focus-trap.js";
import { AttachButton, AttachmentTray, filesOf, toParts, useAttachments } from "./attachments.js";

function useController(ctl: AppController): void {
  const [, setTick] = useState(0);
  useEffect(() => ctl.subscribe(() => setTick((t) => t + 1)), [ctl]);
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
  const [modelMenu, setModelMenu] = useState(false);
  const phone = usePhone();
  const [dialog, setDialog] = useState<"settings" | "help" | undefined>(undefined);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => shortcut(e, { ctl, navOpen, setNavOpen, dialog, setDialog });
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [ctl, navOpen, dialog]);

  if (ctl.needsKey) return <KeyScreen ctl={ctl} />;

  const m = ctl.current;
  const actions: BlockActions = {
    switchModel: () => setModelMenu(true),
    copy: copyText,
    paused: ctl.linkDown,
    running: m?.running ?? false,
    usage: (key) => m?.usage[key],
  };
  return (
    <div class={`shell ${navOpen ? "nav-open" : ""}`} data-link={ctl.linkDown ? "down" : "up"}>
      <a class="skip-link" href="#composer-input" onClick={skipToComposer}>
        Skip to the message box
      </a>
      <header class="topbar">
        <button type="button" class="icon-btn only-phone" aria-label="Sessions" aria-expanded={navOpen} onClick={() => setNavOpen(!navOpen)}>
          <Icon name="menu" />
        </button>
        <div class="brand">
          <span class="logo" aria-hidden="true" />
          <span>Tether</span>
        </div>
        <h1 class="topbar-title" title={m?.title || undefined}>
          {m ? m.title || "Untitled session" : ctl.currentId ? "" : "New session"}
        </h1>
        {m ? (
          <ModelMenu ctl={ctl} model={m} open={modelMenu} setOpen={setModelMenu} />
        ) : (
          !ctl.currentId && ctl.models.length > 0 && <ModelMenu ctl={ctl} model={draftModel(ctl)} open={modelMenu} setOpen={setModelMenu} />
        )}
        <ConnectionIndicator ctl={ctl} />
        <button type="button" class="icon-btn" aria-label="Keyboard shortcuts" title="Keyboard shortcuts (?)" onClick={() => setDialog("help")}>
          ?
        </button>
        <button type="button" class="icon-btn" aria-label="Settings" title="Settings" onClick={() => setDialog("settings")}>
          <Icon name="settings" />
        </button>
      </header>
      <div class="body">
        <Sidebar ctl={ctl} onPick={() => setNavOpen(false)} hidden={phone && !navOpen} />
        <div class="scrim only-phone" onClick={() => setNavOpen(false)} />
        <main class="chat" aria-label="Chat">
          {m ? (
            <ChatView ctl={ctl} model={m} actions={actions} />
          ) : ctl.sessionError ? (
            <div class="empty">
              <h2>Cannot open this session</h2>
              <p>{ctl.sessionError}</p>
              <button type="button" class="btn btn-primary" onClick={() => ctl.newSession()}>
                New session
              </button>
            </div>
          ) : ctl.loading ? (
            <div class="empty">
              <div class="spinner" aria-label="Loading" />
            </div>
          ) : (
            <DraftView ctl={ctl} />
          )}
          {!m && ctl.loading && <Toasts ctl={ctl} />}
        </main>
        {m && m.todo.items.length > 0 && <TodoPanel model={m} />}
      </div>
      {ctl.confirm && <ConfirmDialog ctl={ctl} />}
      {dialog === "settings" && <SettingsDialog ctl={ctl} onClose={() => setDialog(undefined)} />}
      {dialog === "help" && <HelpDialog onClose={() => setDialog(undefined)} />}
      <div class="sr-only" role="status" aria-live="polite" data-testid="announcer">
        {ctl.announcement}
      </div>
    </div>
  );
}

/** What a draft's model menu shows: the model picked for it, else the gateway's first listed. */
function draftModel(ctl: AppController): { model: string; provider: string } {
  const id = ctl.draftModel ?? ctl.models[0]!.id;
  return { model: id, provider: ctl.models.find((o) => o.id === id)?.provider ?? "" };
}

interface ShortcutState {
  ctl: AppController;
  navOpen: boolean;
  setNavOpen(open: boolean): void;
  dialog: string | undefined;
  setDialog(d: "settings" | "help" | undefined): void;
}

/** The skip link: focus the composer (a hash link would change the route). */
function skipToComposer(e: MouseEvent): void {
  e.preventDefault();
  document.getElementById("composer-input")?.focus();
}

function typing(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.isContentEditable);
}

/** The page's keyboard shortcuts (listed in the help overlay, settings.tsx SHORTCUTS). */
function shortcut(e: KeyboardEvent, s: ShortcutState): void {
  const ctrl = e.ctrlKey || e.metaKey;
  if (e.key === "Escape" && e.shiftKey) {
    e.preventDefault();
    document.getElementById("composer-input")?.focus();
  } else if (e.key === "Escape") {
    if (s.dialog) s.setDialog(undefined);
    else if (s.ctl.confirm) s.ctl.cancelConfirm();
    else if (s.navOpen) s.setNavOpen(false);
    else if (s.ctl.current?.running) void s.ctl.interrupt();
  } else if ((ctrl && e.key.toLowerCase() === "k") || (e.key === "/" && !typing(e.target))) {
    e.preventDefault();
    s.setNavOpen(true);
    setTimeout(() => document.getElementById("session-search")?.focus(), 0);
  } else if (ctrl && e.shiftKey && e.key.toLowerCase() === "o") {
    e.preventDefault();
    s.ctl.newSession();
    setTimeout(() => document.getElementById("composer-input")?.focus(), 0);
  } else if (e.key === "?" && !typing(e.target) && !ctrl) {
    e.preventDefault();
    s.setDialog("help");
  }
}

/** The phone layout (the sidebar is a drawer there): matches the stylesheet's breakpoint. */
function usePhone(): boolean {
  const query = "(max-width: 820px)";
  const [phone, setPhone] = useState(() => window.matchMedia(query).matches);
  useEffect(() => {
    const mq = window.matchMedia(query);
    const on = () => setPhone(mq.matches);
    mq.addEventListener("change", on);
    return () => mq.removeEventListener("change", on);
  }, []);
  return phone;
}

/** The newest toast, in the page's flow above the composer: it covers nothing and never stacks. */
function Toasts({ ctl }: { ctl: AppController }) {
  return (
    <div class="toasts" role="status" aria-live="polite">
      {ctl.toasts.map((t) => (
        <div key={t.id} class={`toast toast-${t.tone}`}>
          {t.text}
        </div>
      ))}
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
  if (ctl.offline && s.state === "connected") return <ConnPill state="offline" label="Offline — waiting for the network" />;
  if (ctl.stalled && s.state === "connected") return <ConnPill state="reconnecting" label="No answer — checking the connection…" />;
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
  if (ctl.offline) label = "Offline — waiting for the network";
  const title = s.state === "reconnecting" ? s.reason : s.state === "connected" ? `epoch ${s.epoch}` : undefined;
  return <ConnPill state={state} label={label} title={title} />;
}

/** The connection pill: a dot and words (on a phone too: never colour alone). */
function ConnPill({ state, label, title }: { state: string; label: string; title?: string | undefined }) {
  return (
    <div class="conn" data-state={state} role="status" aria-live="polite" title={title ?? label} data-testid="connection">
      <span class="conn-dot" aria-hidden="true" />
      <span class="conn-label">{label}</span>
      <span class="conn-short" aria-hidden="true">
        {shortLabel(state)}
      </span>
    </div>
  );
}

function shortLabel(state: string): string {
  if (state === "connected") return "Live";
  if (state === "offline") return "Offline";
  if (state === "catching_up") return "Syncing";
  if (state === "closed") return "Closed";
  return "Retrying";
}

/**
 * A new session before its first prompt: the composer, focused, with one line on what Tether is.
 * Nothing exists on the gateway yet; the first send creates the session (controller.startSession).
 */
function DraftView({ ctl }: { ctl: AppController }) {
  const provider = ctl.models[0]?.provider;
  return (
    <>
      <div class="transcript draft" role="log" aria-label="Transcript">
        <div class="transcript-inner">
          <div class="welcome-line" data-testid="welcome">
            <span class="logo" aria-hidden="true" />
            <p>Tether keeps every reply: a dropped connection or a restart never loses or repeats a word.</p>
          </div>
          <FolderPicker ctl={ctl} />
          {ctl.starting !== undefined ? (
            <div class="msg msg-user" data-kind="pending" data-status="sending">
              <div class="bubble">{ctl.starting}</div>
            </div>
          ) : (
            <SuggestionChips ctl={ctl} provider={provider} />
          )}
        </div>
      </div>
      <Toasts ctl={ctl} />
      <Composer ctl={ctl} />
    </>
  );
}

/**
 * A reader at the bottom stays there as the transcript grows (a streamed reply, rows measured by
 * the virtualiser, a session opened) or its box shrinks (the composer grows). A ResizeObserver on
 * the scroller and its content says when, after the browser's own layout: scrolling from a layout
 * effect on every render read scrollHeight and forced a second layout per streamed frame.
 */
function useStickToBottom(scroller: { current: HTMLElement | null }, stick: { current: boolean }): void {
  useLayoutEffect(() => {
    const el = scroller.current;
    const inner = el?.querySelector(".transcript-inner");
    if (!el || !inner || typeof ResizeObserver !== "function") return;
    const ro = new ResizeObserver(() => {
      if (stick.current && el.scrollHeight - el.scrollTop - el.clientHeight > 1) el.scrollTop = el.scrollHeight;
    });
    ro.observe(el);
    ro.observe(inner);
    return () => ro.disconnect();
  }, []);
}

function ChatView({ ctl, model, actions }: { ctl: AppController; model: SessionModel; actions: BlockActions }) {
  const scroller = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const [away, setAway] = useState(false);
  useStickToBottom(scroller, stick);
  const jump = () => {
    const el = scroller.current;
    stick.current = true;
    setAway(false);
    if (el) {
      el.dataset["stick"] = "1";
      el.scrollTop = el.scrollHeight;
    }
    document.getElementById("composer-input")?.focus();
  };
  const ended = model.state === "ended";
  const recoverable = isRecoverableEnd(model.endReason);
  return (
    <>
      <div
        class="transcript"
        ref={scroller}
        role="log"
        aria-label="Transcript"
        // Not live: it would read every streamed word. The page's status region announces a finished reply.
        aria-live="off"
        onScroll={(e) => {
          const el = e.currentTarget as HTMLDivElement;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
          el.dataset["stick"] = stick.current ? "1" : "0";
          if (away === stick.current) setAway(!stick.current);
        }}
      >
        <div class="transcript-inner">
          {model.blocks.length === 0 && model.pending.length === 0 && <SuggestionChips ctl={ctl} provider={model.provider} />}
          <ExchangeList ctl={ctl} model={model} actions={actions} scroller={scroller} />
          {/* This page's own browser tools answer by themselves; any other client tool gets a card. */}
          {model.requests.filter((r) => !(r.kind === "client_tool" && isBrowserTool(r.tool))).map((r) => (
            <RequestCard key={r.request_id} request={r} ctl={ctl} />
          ))}
        </div>
      </div>
      {away && model.running && <JumpToLatest onJump={jump} />}
      <Toasts ctl={ctl} />
      {!ended && <ProcessPanel ctl={ctl} sessionId={model.sessionId} />}
      {ended ? (
        <div class="ended-bar" role="status">
          <span>{endedSentence(model.endReason)}</span>
          {model.endReason !== "compression" && model.endReason !== "retention" && (
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

/** What the composer says it will do with a message typed now: the truth about the link and the turn. */
function composerPlaceholder(ctl: AppController, model: SessionModel | undefined): string {
  if (ctl.offline) return "Offline — what you send now goes out when the network is back";
  if (ctl.linkDown) return "Reconnecting — what you send now goes out when the gateway is back";
  if (model?.running) return "Type to queue a follow-up…";
  return "Message Tether…";
}

/** The message box: with `model` it sends into that session; without, it is a draft's (the first send creates the session). */
function Composer({ ctl, model }: { ctl: AppController; model?: SessionModel }) {
  const [text, setText] = useState("");
  const att = useAttachments((message) => ctl.toast(message, "error", 8000));
  const area = useRef<HTMLTextAreaElement>(null);
  useEffect(() => area.current?.focus(), [model?.sessionId]);
  // A first prompt whose session could not be created comes back here.
  useEffect(() => {
    if (ctl.composerDraft.seq === 0) return;
    setText(ctl.composerDraft.text);
    area.current?.focus();
  }, [ctl.composerDraft.seq]);
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
    const items = att.items;
    att.clear();
    void toParts(items).then((parts) => {
      const withParts = parts.length ? parts : undefined;
      return model ? ctl.submit(t, withParts ? { parts: withParts } : {}) : ctl.startSession(t, withParts);
    });
  };
  return (
    <form
      class="composer"
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
      onDragOver={(e) => e.preventDefault()}
      onDrop={(e) => {
        const files = filesOf(e.dataTransfer);
        if (!files.length) return;
        e.preventDefault();
        att.add(files);
      }}
    >
      <AttachmentTray items={att.items} onRemove={att.remove} />
      <label class="sr-only" for="composer-input">
        Message
      </label>
      <textarea
        id="composer-input"
        ref={area}
        rows={1}
        placeholder={composerPlaceholder(ctl, model)}
        value={text}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onPaste={(e) => {
          const files = filesOf(e.clipboardData);
          if (!files.length) return;
          e.preventDefault();
          att.add(files);
        }}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
            e.preventDefault();
            send();
          }
        }}
      />
      <div class="composer-actions">
        <AttachButton onFiles={att.add} />
        {model?.running && (
          <button
            type="button"
            class="btn btn-stop"
            onClick={() => void ctl.interrupt()}
            disabled={ctl.linkDown}
            aria-keyshortcuts="Escape"
            title={ctl.linkDown ? "Cannot stop the reply while the gateway is unreachable" : "Stop the reply (Esc)"}
          >
            <span class="stop-square" aria-hidden="true" /> Stop
          </button>
        )}
        <button type="submit" class="btn btn-primary" disabled={!text.trim() || ctl.starting !== undefined} title="Send (Enter)">
          Send
        </button>
      </div>
      <div class="composer-hint">
        <span aria-hidden="true">Enter to send · Shift+Enter for a new line · Esc to interrupt · ? for shortcuts</span>
        {model && <ContextMeter ctl={ctl} model={model} />}
      </div>
    </form>
  );
}

const APPROVAL_LABELS: Record<string, string> = { once: "Approve once", session: "For this session", always: "Always", deny: "Deny" };

/** An open request: the tool and its arguments with the approval choices, or an MCP server's question. */
function RequestCard({ request, ctl }: { request: OpenRequest; ctl: AppController }) {
  const [text, setText] = useState("");
  // Answered once: the buttons stay disabled after the first click (the card goes with request.resolved).
  const [sent, setSent] = useState(false);
  const answer = (a: { choice?: string; content?: Record<string, unknown>; error?: string; note?: string }) => {
    if (sent) return;
    setSent(true);
    void ctl.respond(request.request_id, a).then((ok) => {
      if (!ok) setSent(false);
    });
  };
  if (request.kind === "input") {
    const field = Object.keys((request.schema?.properties as Record<string, unknown> | undefined) ?? {})[0] ?? "answer";
    return (
      <div class="request-card" role="group" aria-label="Input request" data-request={request.request_id}>
        <div class="request-head">{request.server ?? "A tool"} asks</div>
        <p class="request-message">{request.message}</p>
        <div class="request-actions">
          <input class="request-input" value={text} onInput={(e) => setText((e.currentTarget as HTMLInputElement).value)} aria-label="Answer" />
          <button type="button" class="btn btn-primary btn-sm" disabled={sent} onClick={() => answer({ content: { [field]: text } })}>
            Send
          </button>
          <button type="button" class="btn btn-sm" disabled={sent} onClick={() => answer({ choice: "decline" })}>
            Decline
          </button>
        </div>
      </div>
    );
  }
  if (request.kind === "client_tool") {
    // A tool the client that declared it runs: this page cannot, but may answer it with an error.
    return (
      <div class="request-card" role="group" aria-label="Client tool call" data-request={request.request_id}>
        <div class="request-head">
          Waiting for <code>{request.tool}</code> — a tool the client that declared it runs
        </div>
        <div class="request-args">
          <ToolArgs args={request.args ?? {}} />
        </div>
        <div class="request-actions">
          <button type="button" class="btn btn-sm" disabled={sent} onClick={() => answer({ error: "not run: the web client cannot run this tool" })}>
            Answer with an error
          </button>
        </div>
      </div>
    );
  }
  // What runs, whole (#27): the exact command and the folder it runs in, never cut or scrolled away.
  const command = typeof request.detail?.command === "string" ? request.detail.command : undefined;
  const cwd = typeof request.detail?.cwd === "string" ? request.detail.cwd : undefined;
  const choices = request.choices ?? ["once", "session", "always", "deny"];
  return (
    <div class="request-card" role="group" aria-label="Approval request" data-request={request.request_id}>
      <div class="request-head">
        Approve <code>{request.tool}</code>?
      </div>
      {command !== undefined && (
        <pre class="request-command" aria-label="Command">
          {visibleText(command)}
        </pre>
      )}
      {cwd !== undefined && (
        <div class="request-cwd">
          in <code aria-label="Folder">{cwd === "" ? "(no folder: this session has none)" : visibleText(cwd)}</code>
        </div>
      )}
      <div class="request-args">
        <ToolArgs args={request.args ?? {}} />
      </div>
      <div class="request-actions">
        {choices.map((choice) => (
          <button
            key={choice}
            type="button"
            class={`btn btn-sm ${choice === "once" ? "btn-primary" : ""} ${choice === "deny" ? "request-deny" : ""}`}
            disabled={sent}
            onClick={() => answer({ choice, ...(choice === "deny" && text.trim() ? { note: text.trim() } : {}) })}
          >
            {APPROVAL_LABELS[choice] ?? choice}
          </button>
        ))}
      </div>
      {choices.includes("deny") && (
        <input
          class="request-input request-reason"
          value={text}
          maxLength={2000}
          onInput={(e) => setText((e.currentTarget as HTMLInputElement).value)}
          aria-label="Reason if you deny (optional)"
          placeholder="Reason if you deny (optional): the model reads it"
        />
      )}
    </div>
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
              {item.status === "completed" ? <Icon name="check" size={12} /> : item.status === "in_progress" ? <Icon name="progress" size={12} /> : null}
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
      <div class="modal" role="alertdialog" aria-modal="true" onKeyDown={trapTab} aria-labelledby="confirm-title" aria-describedby="confirm-text">
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
