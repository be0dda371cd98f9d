/**
 * Prompts sent but not started yet (SessionView `pending`): sending, queued behind the running turn
 * (Edit in place — `prompt.edit`, it keeps its place — or Cancel), or failed (Retry, Dismiss). A
 * continue has no text: it shows as the reply about to go on, never as a prompt of the user's.
 */
import { useState } from "preact/hooks";
import type { PendingPrompt } from "./model.js";

export interface PendingActions {
  onDismiss(): void;
  onRetry(): void;
  onCancel(): void;
  /** New text for the queued prompt, in its place. */
  onSave(text: string): void;
}

function Meta({ prompt, paused, actions, onEdit }: { prompt: PendingPrompt; paused: boolean; actions: PendingActions; onEdit?: () => void }) {
  const what = prompt.continues ? "Continue queued — runs after the current turn" : "Queued — runs after the current turn";
  return (
    <div class="pending-meta">
      {prompt.status === "queued" && (
        <>
          <span class="badge badge-queued">{what}</span>
          {onEdit && (
            <button type="button" class="link" onClick={onEdit}>
              Edit
            </button>
          )}
          <button type="button" class="link" onClick={actions.onCancel}>
            Cancel
          </button>
        </>
      )}
      {prompt.status === "sending" && (
        <span class="badge badge-queued">{paused ? "Waiting for the connection…" : prompt.continues ? "Continuing…" : "Sending…"}</span>
      )}
      {prompt.status === "failed" && (
        <>
          <span class="badge badge-error">Not sent: {prompt.error}</span>
          <button type="button" class="link" onClick={actions.onRetry}>
            Retry
          </button>
          <button type="button" class="link" onClick={actions.onDismiss}>
            Dismiss
          </button>
        </>
      )}
    </div>
  );
}

function EditQueued({ prompt, onDone, onSave }: { prompt: PendingPrompt; onDone(): void; onSave(text: string): void }) {
  const [draft, setDraft] = useState(prompt.text);
  return (
    <div class="row row-user pending" data-kind="pending-edit" data-status={prompt.status}>
      <form
        class="bubble bubble-edit"
        onSubmit={(e) => {
          e.preventDefault();
          onDone();
          if (draft.trim() && draft.trim() !== prompt.text) onSave(draft.trim());
        }}
        onKeyDown={(e) => {
          if (e.key === "Escape") {
            e.stopPropagation();
            onDone();
          }
        }}
      >
        <textarea aria-label="Edit queued prompt" value={draft} onInput={(e) => setDraft((e.target as HTMLTextAreaElement).value)} autoFocus rows={3} />
        <div class="edit-actions">
          <button type="button" class="btn btn-sm" onClick={onDone}>
            Cancel
          </button>
          <button type="submit" class="btn btn-sm btn-primary" disabled={!draft.trim()}>
            Save
          </button>
        </div>
      </form>
    </div>
  );
}

export function PendingView({ prompt, paused, actions }: { prompt: PendingPrompt; paused: boolean; actions: PendingActions }) {
  const [editing, setEditing] = useState(false);
  // The turn may start while the editor is open: then there is nothing left to edit in place.
  if (editing && prompt.status === "queued") return <EditQueued prompt={prompt} onDone={() => setEditing(false)} onSave={actions.onSave} />;
  if (prompt.continues) {
    return (
      <div class="row row-assistant row-continued pending" data-kind="pending" data-continues="true" data-status={prompt.status}>
        <Meta prompt={prompt} paused={paused} actions={actions} />
      </div>
    );
  }
  return (
    <div class="row row-user pending" data-kind="pending" data-status={prompt.status}>
      <div class="bubble bubble-user bubble-pending">
        <div class="user-text">{prompt.text}</div>
        <Meta prompt={prompt} paused={paused} actions={actions} onEdit={() => setEditing(true)} />
      </div>
    </div>
  );
}
