/**
 * What happens to each call of a parked step once its requests are settled — and after a crash,
 * where each one stood. A request row's status says it exactly: `resolved` (answered, not run:
 * run it now, or write its refusal), `running` (its tool started and the process died: run it
 * again only if it is read-only or idempotent, else tell the model its effect is unknown).
 */
import { RequestKind, type ToolCall } from "../../protocol/index.js";
import { refusedRun } from "../../agent/tools/index.js";
import type { PendingDecision } from "../../agent/turn-requests.js";
import type { RequestRow, WriteOp } from "../../store/types.js";

export const EFFECT_UNKNOWN = "effect_unknown";

export function callOf(row: RequestRow): ToolCall {
  return { id: row.call_id ?? row.id, name: row.tool ?? "", arguments: JSON.stringify((row.payload as { args?: unknown }).args ?? {}) };
}

const done = (row: RequestRow): WriteOp => ({ op: "request.update", id: row.id, patch: { status: "done" } });

export function decisionOf(row: RequestRow): PendingDecision {
  const call = callOf(row);
  const completeOps = [done(row)];
  if (row.kind === RequestKind.ClientTool) return clientDecision(row, call, completeOps);
  if (row.reason === "cancelled") return { call, action: "refuse", code: "cancelled", message: "the call was cancelled before it ran (the turn was interrupted)", completeOps };
  if (row.reason === "timeout") return { call, action: "refuse", code: "denied", message: "denied: nobody answered the approval in time", completeOps };
  if (row.choice === "deny") {
    const note = row.note ? `: ${row.note}` : "";
    // "the user", not the principal's name: a principal named `default` read as "denied by default".
    return { call, action: "refuse", code: "denied", message: `denied by the user${note}`, completeOps };
  }
  if (row.status === "running" && !row.rerunnable) {
    return {
      call,
      action: "refuse",
      code: EFFECT_UNKNOWN,
      message: "the gateway stopped while this call ran, so its effect is unknown; it was not run again",
      started: true,
      completeOps,
    };
  }
  return { call, action: "run", startOps: [{ op: "request.update", id: row.id, patch: { status: "running" } }], completeOps };
}

/**
 * A client tool's call: the client's `output` is its result (text as it came, anything else as
 * JSON), its `error` a tool error the model reads (`client_error`); cancelled or given up on by
 * the gateway, the call is refused as any waiting call is.
 */
function clientDecision(row: RequestRow, call: ToolCall, completeOps: WriteOp[]): PendingDecision {
  if (row.reason === "cancelled") return { call, action: "refuse", code: "cancelled", message: "the call was cancelled before the client answered (the turn was interrupted)", completeOps };
  if (row.reason) return { call, action: "refuse", code: "unavailable", message: `the client tool call ended without an answer (${row.reason})`, completeOps };
  const answer = row.answer ?? {};
  if (row.choice === "error") {
    const message = typeof answer.error === "string" ? answer.error : "the client reported an error";
    return { call, action: "result", run: refusedRun(CLIENT_ERROR, message), completeOps };
  }
  const output = answer.output;
  const content = typeof output === "string" ? output : JSON.stringify(output ?? null);
  return { call, action: "result", run: { result: output ?? null, content }, completeOps };
}

/** The tool error code of a client tool that answered with `error`. */
export const CLIENT_ERROR = "client_error";
