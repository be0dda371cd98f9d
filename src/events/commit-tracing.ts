/**
 * Store commits slower than `tracing().commitThresholdMs` (config `tracing.commit_threshold_ms`,
 * default 50 ms) become `tether.store.commit` spans: how long, how many ops and events, and a link
 * to each turn whose frames the batch wrote (a group commit serves many turns at once, so it is
 * linked to them rather than parented under one). Nothing is timed when traces are off.
 */
import { turnSpanContext, type SpanContextRef, type Tracing } from "../lib/tracing.js";
import type { WriteOp } from "../store/types.js";

/** Links per span: enough to find the turns, bounded so one huge batch cannot bloat a span. */
const MAX_LINKS = 32;

export function recordSlowCommit(
  t: Tracing,
  storeKind: string,
  startedAtMs: number,
  durationMs: number,
  ops: readonly WriteOp[],
  error: unknown,
): void {
  if (durationMs < t.commitThresholdMs) return;
  const links: SpanContextRef[] = [];
  const seen = new Set<string>();
  const sessions = new Set<string>();
  let events = 0;
  for (const op of ops) {
    if (op.op !== "event.append") continue;
    events++;
    sessions.add(op.row.session_id);
    const { trace_id: traceId, turn_id: turnId } = op.row;
    if (!traceId || !turnId || seen.has(turnId) || links.length >= MAX_LINKS) continue;
    seen.add(turnId);
    links.push(turnSpanContext(traceId, turnId));
  }
  t.record({
    name: "tether.store.commit",
    startMs: startedAtMs,
    endMs: startedAtMs + durationMs,
    links,
    attributes: {
      "db.system.name": storeKind === "postgres" ? "postgresql" : storeKind,
      "db.operation.name": "COMMIT",
      "tether.commit.ops": ops.length,
      "tether.commit.events": events,
      "tether.commit.sessions": sessions.size,
      "tether.commit.duration_ms": Math.round(durationMs * 10) / 10,
    },
    ...(error ? { error: { type: error instanceof Error ? error.name : "commit_failed", message: error instanceof Error ? error.message : String(error) } } : {}),
  });
}
