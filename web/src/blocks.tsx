/** The transcript's blocks: messages, tool cards, error cards, delegations, notices. */
import { ToolArgs, ToolResult } from "./tool-args.js";
import { Icon } from "./icons.js";
import { MessageAttachments } from "./attachments.js";
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import type { Usage } from "../../src/protocol/index.js";
import { formatCount, interruptedLabel } from "./labels.js";
import type { Block, DelegationTaskView } from "./model.js";
import { highlightJson, renderMarkdown, renderMarkdownFragment } from "./markdown.js";
import { patchChildren } from "./dom-patch.js";
import { noteRender } from "./render-probe.js";

const LAYER_TITLES: Record<string, string> = {
  provider: "Provider error",
  endpoint: "Endpoint error",
  streaming: "Streaming error",
  auth: "Authentication error",
  billing: "Billing error",
  gateway: "Gateway error",
  storage: "Storage error",
  tool: "Tool error",
};

/**
 * Markdown, with a Copy button added to each code block's head bar. `live`: the text grows (a
 * streaming reply): its DOM is patched in place (dom-patch.ts) rather than replaced per frame.
 */
export function Markdown({ text, className, copy, live }: { text: string; className?: string; copy?: (text: string) => Promise<boolean>; live?: boolean }) {
  const html = useMemo(() => (live ? "" : renderMarkdown(text)), [text, live]);
  const root = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    if (live && root.current) patchChildren(root.current, renderMarkdownFragment(text));
  }, [text, live]);
  useEffect(() => {
    const el = root.current;
    if (!copy || !el) return;
    addCopyButtons(el, copy);
  }, [html, text, copy]);
  // Formulas are typeset by KaTeX, loaded the first time a message holds one (math.ts).
  useEffect(() => {
    if (!root.current?.querySelector(".math:not([data-typeset])")) return;
    void import("./math.js").then((m) => root.current && m.typesetMath(root.current));
  }, [html, text]);
  return <div ref={root} class={`md ${className ?? ""}`} {...(live ? {} : { dangerouslySetInnerHTML: { __html: html } })} />;
}

function addCopyButtons(root: HTMLElement, copy: (text: string) => Promise<boolean>): void {
  for (const head of root.querySelectorAll<HTMLElement>(".code-head")) {
    if (head.querySelector(".code-copy")) continue;
    const btn = document.createElement("button");
    btn.type = "button";
    btn.className = "code-copy";
    btn.textContent = "Copy";
    btn.setAttribute("aria-label", "Copy code");
    btn.addEventListener("click", () => {
      const code = head.parentElement?.querySelector("code")?.textContent ?? "";
      void copy(code).then((ok) => {
        if (!ok) return;
        btn.textContent = "Copied";
        setTimeout(() => (btn.textContent = "Copy"), 2000);
      });
    });
    head.appendChild(btn);
  }
}

function Json({ value }: { value: unknown }) {
  const html = useMemo(() => highlightJson(value), [value]);
  return (
    <pre class="code json" tabIndex={0}>
      <code class="hljs" dangerouslySetInnerHTML={{ __html: html }} />
    </pre>
  );
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** What the page lets a block do, and what it needs to know to say the truth. */
export interface BlockActions {
  switchModel(): void;
  copy(text: string): Promise<boolean>;
  /** The gateway cannot be reached: a streaming reply is paused, not live. */
  paused: boolean;
  /** Whether the session runs a turn now (no regenerate meanwhile). */
  running: boolean;
  usage(key: string): Usage | undefined;
}

/** What a block's exchange offers (any exchange of the active branch: the gateway branches from it). */
export interface ExchangeActions {
  /** Runs this exchange again as a new version (undefined when not offered: a turn runs, the session ended). */
  regenerate?: () => void;
  /** Continues an interrupted reply (the newest exchange only). */
  resume?: () => void;
  /** Edits the user message and resends it. */
  edit?: (text: string) => void;
}

/**
 * A reply that a Continue went on with (prompt.submit { continue: true }) shows as one message:
 * `before` — a continuation follows, which shows this part (this one renders nothing); `after` —
 * this part continues the ones above, and shows `text`, the whole reply (its parts joined), with
 * the actions of the reply.
 */
export interface ReplyJoin {
  after?: boolean;
  before?: boolean;
  text?: string;
}

function CopyButton({ text, copy, label = "Copy" }: { text: string; copy(text: string): Promise<boolean>; label?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      class="msg-action"
      aria-label={copied ? "Copied" : label}
      title={label}
      onClick={async () => {
        if (await copy(text)) {
          setCopied(true);
          setTimeout(() => setCopied(false), 2000);
        }
      }}
    >
      {copied ? "Copied" : "Copy"}
    </button>
  );
}

function UserBlock({ block, actions, ex }: { block: Extract<Block, { kind: "user" }>; actions: BlockActions; ex: ExchangeActions }) {
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState(block.text);
  const [expanded, setExpanded] = useState(false);
  if (editing && ex.edit) {
    return (
      <div class="row row-user" data-kind="user-edit" data-key={block.key}>
        <form
          class="bubble bubble-edit"
          onSubmit={(e) => {
            e.preventDefault();
            setEditing(false);
            if (draft.trim() && draft.trim() !== block.text) ex.edit!(draft.trim());
          }}
        >
          <textarea aria-label="Edit prompt" value={draft} onInput={(e) => setDraft((e.target as HTMLTextAreaElement).value)} autoFocus rows={3} />
          <div class="edit-actions">
            <button type="button" class="btn btn-sm" onClick={() => setEditing(false)}>
              Cancel
            </button>
            <button type="submit" class="btn btn-sm btn-primary" disabled={!draft.trim()}>
              Send
            </button>
          </div>
        </form>
      </div>
    );
  }
  // The actions follow the message as a sibling, outside its [data-kind] element (the message only).
  const long = isLongPrompt(block.text);
  const textId = `prompt-${block.key}`;
  return (
    <>
      <div class="row row-user" data-kind="user" data-key={block.key}>
        <div class="bubble bubble-user">
          <MessageAttachments parts={block.attachments} />
          <div class={`user-text ${long && !expanded ? "clamped" : ""}`} id={textId}>
            {block.text}
          </div>
        </div>
      </div>
      <div class="msg-actions msg-actions-user">
        {long && (
          <button type="button" class="msg-action" aria-expanded={expanded} aria-controls={textId} onClick={() => setExpanded(!expanded)}>
            {expanded ? "Show less" : "Show more"}
          </button>
        )}
        <CopyButton text={block.text} copy={actions.copy} label="Copy prompt" />
        {ex.edit && (
          <button
            type="button"
            class="msg-action"
            title="Edit and resend"
            onClick={() => {
              setDraft(block.text);
              setEditing(true);
            }}
          >
            Edit
          </button>
        )}
      </div>
    </>
  );
}

/** A pasted wall of text: shown cut to a few lines with "Show more" (the whole text is still in the page). */
export function isLongPrompt(text: string): boolean {
  return text.length > 600 || text.split("\n").length > 10;
}

function usageText(u: Usage): string {
  return `${formatCount(u.prompt_tokens)} in · ${formatCount(u.completion_tokens)} out`;
}

function AssistantBlock({ block, actions, ex, join = {} }: { block: Extract<Block, { kind: "assistant" }>; actions: BlockActions; ex: ExchangeActions; join?: ReplyJoin }) {
  if (join.before) return null;
  const paused = block.status === "streaming" && actions.paused;
  const usage = actions.usage(block.key);
  const text = join.text ?? block.text;
  return (
    <div
      class="row row-assistant"
      data-kind="assistant"
      data-key={block.key}
      data-status={block.status}
      data-paused={paused ? "true" : undefined}
      data-continues={join.after ? "true" : undefined}
    >
      <div class="avatar" aria-hidden="true">
        T
      </div>
      <div class="assistant-body">
        {block.reasoning && (
          <details class="reasoning">
            <summary>Reasoning</summary>
            <div class="reasoning-text">{block.reasoning}</div>
          </details>
        )}
        <Markdown text={text} className={block.status === "streaming" ? (paused ? "streaming paused" : "streaming") : ""} copy={actions.copy} live={block.status === "streaming"} />
        {block.status === "streaming" && !block.text && <span class={`caret ${paused ? "paused" : ""}`} aria-hidden="true" />}
        {paused ? (
          <div class="badge badge-warn" role="note" data-testid="paused-badge">
            paused — reconnecting
          </div>
        ) : (
          block.status === "streaming" && <span class="sr-only">Streaming…</span>
        )}
        {block.status === "interrupted" && (
          <div class="badge badge-warn" role="note" data-testid="interrupted-badge" data-cause={block.stopReason ?? "unknown"}>
            {interruptedLabel(block.stopReason)}
          </div>
        )}
        {block.status !== "streaming" && (
          <div class="msg-actions">
            {text && <CopyButton text={text} copy={actions.copy} label="Copy reply" />}
            {ex.resume && block.status === "interrupted" && (
              <button type="button" class="msg-action" onClick={ex.resume}>
                Continue
              </button>
            )}
            {ex.regenerate && (
              <button type="button" class="msg-action" onClick={ex.regenerate}>
                Regenerate
              </button>
            )}
            {usage && (
              <span class="usage" data-testid="usage" title={`${formatCount(usage.total_tokens)} tokens in all`}>
                {usageText(usage)}
              </span>
            )}
          </div>
        )}
      </div>
    </div>
  );
}

export function BlockView({ block, actions, ex = {}, join }: { block: Block; actions: BlockActions; ex?: ExchangeActions; join?: ReplyJoin }) {
  noteRender(block.key);
  switch (block.kind) {
    case "user":
      return <UserBlock block={block} actions={actions} ex={ex} />;
    case "assistant":
      return <AssistantBlock block={block} actions={actions} ex={ex} {...(join ? { join } : {})} />;
    case "tool":
      return <ToolCard block={block} />;
    case "error":
      return <ErrorCard block={block} actions={actions} ex={ex} />;
    case "delegation":
      return <DelegationCard block={block} />;
    case "delegation-result":
      return <DelegationResultCard block={block} />;
    case "notice":
      return (
        <div class={`notice notice-${block.tone}`} role="note">
          {block.text}
        </div>
      );
  }
}

const TASK_LABELS: Record<DelegationTaskView["status"], string> = {
  pending: "waiting",
  running: "running…",
  completed: "done",
  failed: "failed",
};

function delegationTitle(kind: string, tasks: number): string {
  if (kind === "review") return "Review";
  return tasks === 1 ? "Sub-agent" : `Sub-agents · ${tasks} tasks`;
}

function TaskList({ tasks }: { tasks: DelegationTaskView[] }) {
  return (
    <ol class="dlg-tasks">
      {tasks.map((t, n) => (
        <li key={n} class="dlg-task" data-status={t.status}>
          <span class="dlg-dot" aria-hidden="true" />
          <span class="dlg-goal" title={t.goal}>
            {t.goal}
          </span>
          <span class="dlg-state">
            {TASK_LABELS[t.status]}
            {t.durationMs !== undefined && (t.status === "completed" || t.status === "failed") ? ` · ${formatDuration(t.durationMs)}` : ""}
          </span>
          {t.error && <div class="dlg-error">{t.error}</div>}
        </li>
      ))}
    </ol>
  );
}

/** A delegation where it started: its tasks, live (running → done/failed), then delivered. */
function DelegationCard({ block }: { block: Extract<Block, { kind: "delegation" }> }) {
  const ended = block.tasks.filter((t) => t.status === "completed" || t.status === "failed").length;
  const failed = block.tasks.filter((t) => t.status === "failed").length;
  const total = block.tasks.length;
  let badge: { tone: string; text: string };
  if (block.status === "running") badge = { tone: "run", text: total > 1 ? `running · ${ended}/${total} done` : "running…" };
  else if (block.status === "completed") badge = { tone: "run", text: "delivering…" };
  else if (failed > 0) badge = { tone: failed === total ? "error" : "warn", text: failed === total ? "failed" : `delivered · ${failed} failed` };
  else badge = { tone: "ok", text: "delivered" };
  const duration = block.status !== "running" && block.durationMs !== undefined ? formatDuration(block.durationMs) : undefined;
  return (
    <div
      class={`card delegation delegation-${block.delegationKind === "review" ? "review" : "delegate"}`}
      data-kind="delegation"
      data-key={block.key}
      data-delegation-kind={block.delegationKind}
      data-status={block.status}
    >
      <div class="card-head">
        <span class="card-icon" aria-hidden="true">
          <Icon name={block.delegationKind === "review" ? "review" : "delegate"} />
        </span>
        <span class="card-title">{delegationTitle(block.delegationKind, total)}</span>
        {duration && <span class="card-meta">{duration}</span>}
        <span class={`badge badge-${badge.tone}`}>{badge.text}</span>
      </div>
      <TaskList tasks={block.tasks} />
      {block.status === "delivered" && block.resultKey && (
        <div class="card-foot">
          <button
            type="button"
            class="link"
            onClick={() => document.querySelector(`[data-kind="delegation-result"][data-key="${CSS.escape(block.resultKey!)}"]`)?.scrollIntoView({ behavior: "smooth", block: "center" })}
          >
            Show the result <Icon name="down" size={14} />
          </button>
        </div>
      )}
    </div>
  );
}

/** The delivered results, where they landed: a card of their own (never a user bubble), Markdown. */
function DelegationResultCard({ block }: { block: Extract<Block, { kind: "delegation-result" }> }) {
  const review = block.delegationKind === "review";
  const tone = block.failed === 0 ? "ok" : block.completed === 0 ? "error" : "warn";
  return (
    <div
      class="card delegation-result"
      data-kind="delegation-result"
      data-key={block.key}
      data-delegation-id={block.delegationId}
      data-delegation-kind={block.delegationKind}
    >
      <div class="card-head">
        <span class="card-icon" aria-hidden="true">
          <Icon name={review ? "review" : "result"} />
        </span>
        <span class="card-title">{review ? "Review result" : block.total === 1 ? "Sub-agent result" : "Sub-agent results"}</span>
        {block.durationMs !== undefined && <span class="card-meta">{formatDuration(block.durationMs)}</span>}
        <span class={`badge badge-${tone}`}>
          {block.completed}/{block.total} completed{block.failed > 0 ? ` · ${block.failed} failed` : ""}
        </span>
      </div>
      <div class="delivered">
        <Markdown text={block.text} />
      </div>
      <div class="card-foot">Added to the conversation: the model sees it with your next message.</div>
    </div>
  );
}

function ToolCard({ block }: { block: Extract<Block, { kind: "tool" }> }) {
  const state = !block.done ? (block.awaiting ? "awaiting" : "running") : block.error ? "failed" : "done";
  return (
    <details class="card tool" data-kind="tool" data-state={state}>
      <summary class="card-head">
        <span class="card-icon" aria-hidden="true">
          <Icon name="tool" size={14} />
        </span>
        <span class="card-title">
          <code>{block.name}</code>
        </span>
        {state === "running" && <span class="badge badge-run">running…</span>}
        {state === "awaiting" && <span class="badge badge-run">waiting for approval</span>}
        {state === "done" && <span class="badge badge-ok">done{block.durationMs !== undefined ? ` · ${formatDuration(block.durationMs)}` : ""}</span>}
        {state === "failed" && <span class="badge badge-error">failed{block.durationMs !== undefined ? ` · ${formatDuration(block.durationMs)}` : ""}</span>}
      </summary>
      <div class="tool-body">
        <div class="tool-label">Arguments</div>
        <ToolArgs args={block.args ?? {}} />
        {block.done && (
          <>
            <div class="tool-label">{block.error ? "Error" : "Result"}</div>
            {block.error ? <pre class="code tool-error" tabIndex={0}>{block.error}</pre> : <ToolResult value={block.result ?? null} />}
          </>
        )}
      </div>
    </details>
  );
}

function ErrorCard({ block, actions, ex }: { block: Extract<Block, { kind: "error" }>; actions: BlockActions; ex: ExchangeActions }) {
  const [copied, setCopied] = useState(false);
  const e = block.error;
  const title = e ? (LAYER_TITLES[e.layer] ?? `${e.layer} error`) : "The turn failed";
  const diagnostics = JSON.stringify(
    {
      turn_id: block.turnId ?? null,
      trace_id: block.traceId ?? null,
      layer: e?.layer ?? null,
      code: e?.code ?? null,
      retryable: e?.retryable ?? null,
      message: e?.message ?? null,
    },
    null,
    2,
  );
  return (
    <div
      class="card error-card"
      // Only a new error interrupts a screen reader: one rebuilt on opening the session does not.
      role={block.fresh ? "alert" : "group"}
      aria-label={block.fresh ? undefined : title}
      data-kind="error"
      data-layer={e?.layer ?? ""}
      data-code={e?.code ?? ""}
      data-retryable={e ? String(e.retryable) : ""}
    >
      <div class="card-head">
        <span class="card-icon" aria-hidden="true">
          !
        </span>
        <span class="card-title">{title}</span>
        {e && <code class="error-code">{e.code}</code>}
      </div>
      {e && <div class="error-message">{e.message}</div>}
      <div class="card-actions">
        {e?.retryable && ex.regenerate && (
          <button type="button" class="btn btn-primary btn-sm" onClick={ex.regenerate}>
            Regenerate
          </button>
        )}
        <button type="button" class="btn btn-sm" onClick={() => actions.switchModel()}>
          Switch model
        </button>
        <button
          type="button"
          class="btn btn-sm"
          onClick={async () => {
            if (await actions.copy(diagnostics)) {
              setCopied(true);
              setTimeout(() => setCopied(false), 2000);
            }
          }}
        >
          {copied ? "Copied" : "Copy diagnostics"}
        </button>
      </div>
      {(block.turnId || block.traceId) && (
        <div class="diag">
          {block.turnId && <span>turn {block.turnId}</span>}
          {block.traceId && <span>trace {block.traceId}</span>}
        </div>
      )}
    </div>
  );
}
