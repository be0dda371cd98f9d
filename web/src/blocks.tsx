/** The transcript's blocks: messages, tool cards, error cards, delegations, notices. */
import { useMemo, useState } from "preact/hooks";
import type { Block, DelegationTaskView, PendingPrompt } from "./model.js";
import { highlightJson, renderMarkdown } from "./markdown.js";

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

export function Markdown({ text, className }: { text: string; className?: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  return <div class={`md ${className ?? ""}`} dangerouslySetInnerHTML={{ __html: html }} />;
}

function Json({ value }: { value: unknown }) {
  const html = useMemo(() => highlightJson(value), [value]);
  return (
    <pre class="code json">
      <code class="hljs" dangerouslySetInnerHTML={{ __html: html }} />
    </pre>
  );
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export interface BlockActions {
  retry(text: string): void;
  switchModel(): void;
  copy(text: string): Promise<boolean>;
}

export function BlockView({ block, actions }: { block: Block; actions: BlockActions }) {
  switch (block.kind) {
    case "user":
      return (
        <div class="row row-user" data-kind="user" data-key={block.key}>
          <div class="bubble bubble-user">
            <div class="user-text">{block.text}</div>
          </div>
        </div>
      );
    case "assistant":
      return (
        <div class="row row-assistant" data-kind="assistant" data-key={block.key} data-status={block.status}>
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
            <Markdown text={block.text} className={block.status === "streaming" ? "streaming" : ""} />
            {block.status === "streaming" && !block.text && <span class="caret" aria-hidden="true" />}
            {block.status === "streaming" && <span class="sr-only">Streaming…</span>}
            {block.status === "interrupted" && (
              <div class="badge badge-warn" role="note" data-testid="interrupted-badge">
                Interrupted — the reply stopped here
              </div>
            )}
          </div>
        </div>
      );
    case "tool":
      return <ToolCard block={block} />;
    case "error":
      return <ErrorCard block={block} actions={actions} />;
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
          {block.delegationKind === "review" ? "✎" : "⇄"}
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
            Show the result ↓
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
          {review ? "✎" : "↩"}
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
          ⚙
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
        <Json value={block.args ?? {}} />
        {block.done && (
          <>
            <div class="tool-label">{block.error ? "Error" : "Result"}</div>
            {block.error ? <pre class="code tool-error">{block.error}</pre> : <Json value={block.result ?? null} />}
          </>
        )}
      </div>
    </details>
  );
}

function ErrorCard({ block, actions }: { block: Extract<Block, { kind: "error" }>; actions: BlockActions }) {
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
      role="alert"
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
        {e?.retryable && block.input !== undefined && (
          <button type="button" class="btn btn-primary btn-sm" onClick={() => actions.retry(block.input!)}>
            Retry
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
          {copied ? "Copied ✓" : "Copy diagnostics"}
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

export function PendingView({ prompt, onDismiss, onRetry }: { prompt: PendingPrompt; onDismiss(): void; onRetry(): void }) {
  return (
    <div class="row row-user pending" data-kind="pending" data-status={prompt.status}>
      <div class="bubble bubble-user bubble-pending">
        <div class="user-text">{prompt.text}</div>
        <div class="pending-meta">
          {prompt.status === "queued" && <span class="badge badge-queued">Queued — runs after the current turn</span>}
          {prompt.status === "sending" && <span class="badge badge-queued">Sending…</span>}
          {prompt.status === "failed" && (
            <>
              <span class="badge badge-error">Not sent: {prompt.error}</span>
              <button type="button" class="link" onClick={onRetry}>
                Retry
              </button>
              <button type="button" class="link" onClick={onDismiss}>
                Dismiss
              </button>
            </>
          )}
        </div>
      </div>
    </div>
  );
}
