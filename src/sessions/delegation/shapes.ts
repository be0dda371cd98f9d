/**
 * What a delegation looks like outside its row: the summary `delegation.list` and the Snapshot
 * show, and the one message its delivery writes into the origin's live tip.
 */
import { isDelegationKind, type DelegationKind, type DelegationResultMetadata, type DelegationSummary } from "../../protocol/index.js";
import type { DelegationRow } from "../../store/types.js";

/** Written as a `role: "user"` message with `display_kind: DisplayKind.DelegationComplete`. */
export interface DeliveryMessage {
  content: string;
  display_metadata: DelegationResultMetadata;
}

/** The row's kind: the store keeps it as text; only start() writes it, from a DelegationKind. */
export function kindOf(r: DelegationRow): DelegationKind {
  return isDelegationKind(r.kind) ? r.kind : "delegate";
}

export function summaryOf(r: DelegationRow): DelegationSummary {
  return {
    delegation_id: r.id,
    kind: kindOf(r),
    status: r.status,
    origin_session_id: r.origin_session_id,
    tasks: r.tasks.map((t) => ({ goal: t.goal, status: t.status, child_session_id: t.child_session_id, error: t.error, duration_ms: t.duration_ms })),
    created_at: r.created_at,
    completed_at: r.completed_at,
    delivered_at: r.delivered_at,
    delivered_session_id: r.delivered_session_id,
    delivered_message_id: r.delivered_message_id,
  };
}

/** The one message a delivery writes: every task's outcome, with counts and duration in its metadata. */
export function deliveryMessage(r: DelegationRow, now: number): DeliveryMessage {
  const completed = r.tasks.filter((t) => t.status === "completed").length;
  const failed = r.tasks.length - completed;
  const durationMs = Math.max(0, (r.completed_at ?? now) - r.created_at);
  const what = r.kind === "review" ? "Review" : "Background task";
  const lines = [`[${what} complete — delegation ${r.id}: ${completed} completed, ${failed} failed, ${(durationMs / 1000).toFixed(1)} s]`];
  r.tasks.forEach((t, i) => {
    lines.push("", `${i + 1}. ${t.goal.split("\n")[0]!.slice(0, 200)} — ${t.status === "completed" ? "completed" : "failed"}`);
    if (t.result) lines.push(t.result);
    if (t.error) lines.push(`Error: ${t.error}`);
  });
  return {
    content: lines.join("\n"),
    display_metadata: {
      delegation_id: r.id,
      kind: kindOf(r),
      completed,
      failed,
      total: r.tasks.length,
      duration_ms: durationMs,
      tasks: r.tasks.map((t) => ({ goal: t.goal, status: t.status, child_session_id: t.child_session_id, error: t.error })),
    },
  };
}
