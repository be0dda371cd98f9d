/**
 * The sessions list: a stable order (by when each session started, so renaming or closing never
 * moves a row under the pointer), grouped Today / Yesterday / Earlier. A row is its title (cut with
 * an ellipsis, whole on hover), a quiet dot while a reply runs or an approval waits, and a ⋯ menu
 * beside it (never over it): one Tab stop per row, arrows between rows, → opens the menu.
 */
import { useRef, useState } from "preact/hooks";
import type { SessionSummary } from "../../src/protocol/index.js";
import { isRecoverableEnd } from "../../src/protocol/end-reasons.js";
import type { AppController } from "./controller.js";
import { Icon } from "./icons.js";
import { grouped } from "./session-order.js";
import { SessionMenu, type MenuItem } from "./session-menu.js";

/** Search (titles and contents, by the gateway) and the archived list's toggle. */
function SearchBox({ ctl }: { ctl: AppController }) {
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const [text, setText] = useState(ctl.searchQuery);
  return (
    <div class="session-search">
      <input
        id="session-search"
        type="search"
        placeholder="Search sessions"
        aria-label="Search sessions"
        value={text}
        onInput={(e) => {
          const v = (e.target as HTMLInputElement).value;
          setText(v);
          clearTimeout(timer.current);
          timer.current = setTimeout(() => ctl.search(v), 200);
        }}
        onKeyDown={(e) => {
          if (e.key === "Escape" && text) {
            e.stopPropagation();
            setText("");
            ctl.search("");
          }
        }}
      />
      <button type="button" class={`btn btn-sm ${ctl.showArchived ? "btn-primary" : ""}`} aria-pressed={ctl.showArchived} onClick={() => ctl.toggleArchived()}>
        Archived
      </button>
    </div>
  );
}

export function Sidebar({ ctl, onPick, hidden }: { ctl: AppController; onPick(): void; hidden: boolean }) {
  return (
    <nav class="sidebar" aria-label="Sessions" aria-hidden={hidden ? "true" : undefined} {...(hidden ? { inert: true } : {})}>
      <div class="sidebar-head">
        <button type="button" class="btn btn-primary btn-block" data-testid="new-session" onClick={() => {
            ctl.newSession();
            onPick();
            setTimeout(() => document.getElementById("composer-input")?.focus(), 0);
          }}>
          <Icon name="plus" /> New session
        </button>
        <SearchBox ctl={ctl} />
      </div>
      <div class="session-list">
        {ctl.sessions.length === 0 && (
          <div class="session-empty">{ctl.searchQuery.trim() ? "No session matches" : ctl.showArchived ? "No archived sessions" : "No sessions yet"}</div>
        )}
        {grouped(ctl.sessions).map((g) => (
          <section key={g.label} class="session-group" aria-label={g.label}>
            <h2 class="session-group-head">{g.label}</h2>
            <ul>
              {g.items.map((s) => (
                <SessionItem key={s.session_id} ctl={ctl} s={s} active={s.session_id === ctl.currentId} onPick={onPick} />
              ))}
            </ul>
          </section>
        ))}
      </div>
    </nav>
  );
}

function RenameForm({ initial, onSave, onCancel }: { initial: string; onSave(title: string): void; onCancel(): void }) {
  const [title, setTitle] = useState(initial);
  return (
    <form
      class="rename"
      onSubmit={(e) => {
        e.preventDefault();
        onSave(title.trim());
      }}
    >
      <input
        aria-label="Session title"
        value={title}
        onInput={(e) => setTitle((e.target as HTMLInputElement).value)}
        onKeyDown={(e) => {
          if (e.key === "Escape") {
            e.stopPropagation();
            onCancel();
          }
        }}
        autoFocus
      />
      <button type="submit" class="btn btn-sm btn-primary">
        Save
      </button>
    </form>
  );
}

/** Arrow keys move between rows (each row is one Tab stop); → or the context-menu key opens the row's menu. */
function rowKeys(e: KeyboardEvent, openMenu: () => void): void {
  const el = e.currentTarget as HTMLElement;
  if (e.key === "ArrowDown" || e.key === "ArrowUp") {
    const rows = [...(el.closest(".session-list")?.querySelectorAll<HTMLElement>(".session-main") ?? [])];
    const at = rows.indexOf(el);
    const next = rows[e.key === "ArrowDown" ? at + 1 : at - 1];
    if (next) {
      e.preventDefault();
      next.focus();
    }
  } else if (e.key === "ArrowRight" || e.key === "ContextMenu" || (e.shiftKey && e.key === "F10")) {
    e.preventDefault();
    openMenu();
  }
}

function SessionItem({ ctl, s, active, onPick }: { ctl: AppController; s: SessionSummary; active: boolean; onPick(): void }) {
  const [editing, setEditing] = useState(false);
  const [confirmClose, setConfirmClose] = useState(false);
  const [more, setMore] = useState(false);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const main = useRef<HTMLButtonElement>(null);
  const name = s.title || "Untitled session";
  const canReopen = s.state === "ended" && s.end_reason !== "compression" && s.end_reason !== "retention";
  // A reply runs or an approval waits: the open session knows at once, the others from the list.
  const m = active ? ctl.current : undefined;
  const busy = m ? m.running || m.requests.length > 0 : s.running === true;
  const items: MenuItem[] = [
    { label: "Rename", run: () => setEditing(true) },
    { label: s.archived ? "Unarchive" : "Archive", run: () => void ctl.archive(s.session_id, !s.archived) },
    { label: "Download", title: "The transcript as Markdown, with what it was compressed from", run: () => void ctl.download(s.session_id, name) },
  ];
  if (canReopen) {
    items.push({ label: isRecoverableEnd(s.end_reason) ? "Resume" : "Reopen", run: () => void ctl.reopen(s.session_id) });
  } else if (s.state !== "ended") {
    items.push({ label: "Close session…", title: "End it: it can be reopened later", run: () => setConfirmClose(true) });
  }
  items.push({ label: "Delete…", danger: true, run: () => setConfirmDelete(true) });
  const closeMenu = (refocus: boolean) => {
    setMore(false);
    if (refocus) main.current?.focus();
  };
  return (
    <li class={`session ${active ? "active" : ""}`} data-state={s.state} data-session-id={s.session_id} data-activity={busy ? "on" : undefined}>
      {editing ? (
        <RenameForm
          initial={s.title}
          onCancel={() => {
            setEditing(false);
            setTimeout(() => main.current?.focus(), 0);
          }}
          onSave={(title) => {
            setEditing(false);
            void ctl.rename(s.session_id, title);
          }}
        />
      ) : (
        <div class="session-row">
          <button
            type="button"
            ref={main}
            class="session-main"
            title={name}
            aria-current={active ? "true" : undefined}
            aria-keyshortcuts="ArrowRight"
            onKeyDown={(e) => rowKeys(e, () => setMore(true))}
            onClick={() => {
              ctl.navigate(s.session_id);
              onPick();
            }}
          >
            <span class="session-title">{name}</span>
            {busy && (
              <span class="activity" data-testid="activity">
                <span class="sr-only"> (working)</span>
              </span>
            )}
          </button>
          <button
            type="button"
            class="icon-btn session-more-btn"
            tabIndex={-1}
            aria-label={`More actions for ${name}`}
            aria-haspopup="menu"
            aria-expanded={more}
            title="More"
            onClick={() => setMore(!more)}
          >
            <Icon name="more" />
          </button>
          {more && (
            <SessionMenu
              label={`Actions for ${name}`}
              onClose={closeMenu}
              items={items.map((it) => ({
                ...it,
                run: () => {
                  setMore(false);
                  it.run();
                },
              }))}
            />
          )}
        </div>
      )}
      {confirmDelete && !editing && (
        <div class="session-confirm" role="group" aria-label={`Delete ${name}?`}>
          <span>Delete this session and its transcript for good?</span>
          <button type="button" class="btn btn-sm btn-danger" onClick={() => void ctl.deleteSession(s.session_id)}>
            Delete it
          </button>
          <button
            type="button"
            class="btn btn-sm"
            autoFocus
            onClick={() => {
              setConfirmDelete(false);
              main.current?.focus();
            }}
          >
            Keep
          </button>
        </div>
      )}
      {confirmClose && !editing && (
        <div class="session-confirm" role="group" aria-label={`Close ${name}?`}>
          <span>Close this session? It can be reopened later.</span>
          <button type="button" class="btn btn-sm btn-danger" onClick={() => void ctl.close(s.session_id).then(() => setConfirmClose(false))}>
            Close it
          </button>
          <button
            type="button"
            class="btn btn-sm"
            onClick={() => {
              setConfirmClose(false);
              main.current?.focus();
            }}
            autoFocus
          >
            Keep
          </button>
        </div>
      )}
    </li>
  );
}
