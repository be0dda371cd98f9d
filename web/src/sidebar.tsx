/**
 * The sessions list: a stable order (by when each session started, so renaming or closing never
 * moves a row under the pointer), grouped Today / Yesterday / Earlier, each row with its actions
 * beside its text (never over it) and a close confirm on a row of its own.
 */
import { useRef, useState } from "preact/hooks";
import type { SessionSummary } from "../../src/protocol/index.js";
import { isRecoverableEnd } from "../../src/protocol/end-reasons.js";
import type { AppController } from "./controller.js";
import { sessionStateLabel } from "./labels.js";
import { grouped, relativeTime } from "./session-order.js";

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
        <button type="button" class="btn btn-primary btn-block" onClick={() => void ctl.newSession().then(onPick)}>
          + New session
        </button>
        <SearchBox ctl={ctl} />
      </div>
      <div class="session-list">
        {ctl.sessions.length === 0 && (
          <div class="session-empty">{ctl.searchQuery.trim() ? "No session matches" : ctl.showArchived ? "No archived sessions" : "No sessions yet"}</div>
        )}
        {grouped(ctl.sessions).map((g) => (
          <section key={g.label} class="session-group" aria-label={g.label}>
            <h3 class="session-group-head">{g.label}</h3>
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

function SessionItem({ ctl, s, active, onPick }: { ctl: AppController; s: SessionSummary; active: boolean; onPick(): void }) {
  const [editing, setEditing] = useState(false);
  const [confirmClose, setConfirmClose] = useState(false);
  const [more, setMore] = useState(false);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const name = s.title || "Untitled session";
  const canReopen = s.state === "ended" && s.end_reason !== "compression" && s.end_reason !== "retention";
  return (
    <li class={`session ${active ? "active" : ""}`} data-state={s.state} data-session-id={s.session_id}>
      {editing ? (
        <RenameForm
          initial={s.title}
          onCancel={() => setEditing(false)}
          onSave={(title) => {
            setEditing(false);
            void ctl.rename(s.session_id, title);
          }}
        />
      ) : (
        <div class="session-row">
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
              <span class={`state state-${s.state}`}>{sessionStateLabel(s)}</span>
              <span>{s.model}</span>
              <span>{relativeTime(s.last_activity_at)}</span>
            </span>
          </button>
          <div class="session-actions">
            <button type="button" class="icon-btn" aria-label={`Rename ${name}`} title="Rename" onClick={() => setEditing(true)}>
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
            <button type="button" class="icon-btn" aria-label={`More actions for ${name}`} aria-expanded={more} title="More" onClick={() => setMore(!more)}>
              ⋯
            </button>
          </div>
        </div>
      )}
      {more && !editing && !confirmDelete && (
        <div class="session-confirm session-more" role="group" aria-label={`More actions for ${name}`}>
          <button
            type="button"
            class="btn btn-sm"
            onClick={() => {
              setMore(false);
              void ctl.archive(s.session_id, !s.archived);
            }}
          >
            {s.archived ? "Unarchive" : "Archive"}
          </button>
          <button
            type="button"
            class="btn btn-sm"
            title="The transcript as Markdown, with what it was compressed from"
            onClick={() => {
              setMore(false);
              void ctl.download(s.session_id, name);
            }}
          >
            Download
          </button>
          <button type="button" class="btn btn-sm btn-danger" onClick={() => setConfirmDelete(true)}>
            Delete…
          </button>
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
              setMore(false);
            }}
          >
            Keep
          </button>
        </div>
      )}
      {confirmClose && !editing && (
        <div class="session-confirm" role="group" aria-label={`Close ${name}?`}>
          <span>Close this session?</span>
          <button type="button" class="btn btn-sm btn-danger" onClick={() => void ctl.close(s.session_id).then(() => setConfirmClose(false))}>
            Close it
          </button>
          <button type="button" class="btn btn-sm" onClick={() => setConfirmClose(false)} autoFocus>
            Keep
          </button>
        </div>
      )}
    </li>
  );
}
