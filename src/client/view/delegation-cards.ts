/**
 * Delegations (background sub-agents) in a transcript: a card placed where the delegation started,
 * kept up to date by `delegation.*` frames and seeded from the Snapshot's `delegations[]`; its
 * delivered result (a `role: "user"` message with `display_kind: "async_delegation_complete"`) is
 * a result card of its own where it landed, never a bubble the user typed.
 */
import { DisplayKind, isDelegationKind } from "../../protocol/index.js";
import type {
  DelegationProgressPayload,
  DelegationResultMetadata,
  DelegationStartedPayload,
  DelegationSummary,
  Message,
} from "../../protocol/index.js";
import { add, get, getOrAdd, idx } from "./transcript-index.js";
import type { BlockOf, DelegationTaskView, SessionModel } from "./transcript-types.js";

/** A delegation card from a DelegationSummary (Snapshot `delegations[]`, `delegation.list`). */
export function delegationCard(d: DelegationSummary): BlockOf<"delegation"> {
  const card: BlockOf<"delegation"> = {
    kind: "delegation",
    key: d.delegation_id,
    delegationKind: d.kind,
    status: d.status,
    tasks: d.tasks.map((t) => {
      const v: DelegationTaskView = { goal: t.goal, status: t.status };
      if (t.error) v.error = t.error;
      if (t.child_session_id) v.childSessionId = t.child_session_id;
      if (typeof t.duration_ms === "number") v.durationMs = t.duration_ms;
      return v;
    }),
  };
  if (d.completed_at !== null) card.durationMs = Math.max(0, d.completed_at - d.created_at);
  if (d.delivered_message_id) card.resultKey = d.delivered_message_id;
  return card;
}

/** A delivered delegation result message (`display_kind: async_delegation_complete`)? */
export function isDelegationResult(msg: Pick<Message, "display_kind">): boolean {
  return msg.display_kind === DisplayKind.DelegationComplete;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function taskOf(t: unknown): DelegationResultMetadata["tasks"][number] {
  const o = isRecord(t) ? t : {};
  const status = o["status"];
  return {
    goal: typeof o["goal"] === "string" ? o["goal"] : "",
    status: status === "completed" || status === "failed" || status === "running" || status === "pending" ? status : "failed",
    child_session_id: typeof o["child_session_id"] === "string" ? o["child_session_id"] : null,
    error: typeof o["error"] === "string" ? o["error"] : null,
  };
}

/** The result's `display_metadata`, read defensively (a field missing never breaks the view). */
export function resultMetadata(msg: Pick<Message, "message_id" | "display_metadata">): DelegationResultMetadata {
  const meta = msg.display_metadata ?? {};
  const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
  const tasks: unknown[] = Array.isArray(meta["tasks"]) ? meta["tasks"] : [];
  return {
    delegation_id: typeof meta["delegation_id"] === "string" ? meta["delegation_id"] : msg.message_id,
    kind: isDelegationKind(meta["kind"]) ? meta["kind"] : "delegate",
    completed: num(meta["completed"]),
    failed: num(meta["failed"]),
    total: num(meta["total"]) || tasks.length,
    duration_ms: num(meta["duration_ms"]),
    tasks: tasks.map(taskOf),
  };
}

/** `[Background task complete — delegation …: 2 completed, 0 failed, 0.3 s]`: for the model, not the card. */
export const RESULT_HEAD = /^\[(?:Background task|Review) complete[^\]\n]*\]\s*/;

export function resultBlock(msg: Pick<Message, "message_id" | "content" | "display_metadata">): BlockOf<"delegation-result"> {
  const meta = resultMetadata(msg);
  const b: BlockOf<"delegation-result"> = {
    kind: "delegation-result",
    key: msg.message_id,
    delegationId: meta.delegation_id,
    delegationKind: meta.kind,
    text: msg.content.replace(RESULT_HEAD, ""),
    completed: meta.completed,
    failed: meta.failed,
    total: meta.total,
    tasks: meta.tasks.map((t) => {
      const v: DelegationTaskView = { goal: t.goal, status: t.status };
      if (t.error) v.error = t.error;
      if (t.child_session_id) v.childSessionId = t.child_session_id;
      return v;
    }),
  };
  if (typeof msg.display_metadata?.["duration_ms"] === "number") b.durationMs = meta.duration_ms;
  return b;
}

/** The delivered result also settles the delegation's card (when shown). */
export function settleCard(m: SessionModel, msg: Pick<Message, "message_id" | "display_metadata">): void {
  const meta = resultMetadata(msg);
  const card = get(m, meta.delegation_id, "delegation");
  if (!card) return;
  card.status = "delivered";
  card.resultKey = msg.message_id;
  if (typeof msg.display_metadata?.["duration_ms"] === "number") card.durationMs = meta.duration_ms;
  meta.tasks.forEach((t, n) => {
    const v = card.tasks[n] ?? (card.tasks[n] = { goal: t.goal, status: t.status });
    v.status = t.status;
    if (t.goal) v.goal = t.goal;
    if (t.error) v.error = t.error;
    else delete v.error;
    if (t.child_session_id) v.childSessionId = t.child_session_id;
  });
}

export function delegationStarted(m: SessionModel, p: DelegationStartedPayload): void {
  if (get(m, p.delegation_id, "delegation")) return; // already shown (a Snapshot seeded it)
  add(m, {
    kind: "delegation",
    key: p.delegation_id,
    delegationKind: p.kind,
    status: "running",
    tasks: p.goals.map((goal) => ({ goal, status: "pending" })),
  });
}

export function delegationProgress(m: SessionModel, p: DelegationProgressPayload, ts: number): void {
  const card = getOrAdd(m, p.delegation_id, "delegation", () => ({ kind: "delegation", key: p.delegation_id, delegationKind: "delegate", status: "running", tasks: [] }));
  if (card.status === "delivered") return;
  for (let n = card.tasks.length; n <= p.task_index; n++) card.tasks.push({ goal: "", status: "pending" });
  const task = card.tasks[p.task_index]!;
  if (p.goal) task.goal = p.goal;
  if (p.child_session_id) task.childSessionId = p.child_session_id;
  const startKey = `${p.delegation_id}#${p.task_index}`;
  const starts = idx(m).taskStarts;
  if (p.status === "running") {
    // A task that ended stays ended.
    if (task.status === "pending" || task.status === "running") {
      task.status = "running";
      starts.set(startKey, ts);
    }
  } else {
    task.status = p.status;
    if (p.error) task.error = p.error;
    const started = starts.get(startKey);
    if (started !== undefined && task.durationMs === undefined) task.durationMs = Math.max(0, ts - started);
  }
  if (card.status === "running" && card.tasks.length > 0 && card.tasks.every((t) => t.status === "completed" || t.status === "failed")) {
    card.status = "completed";
  }
}
