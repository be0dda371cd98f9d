/**
 * Decoding a `delegations` row, the same for every store: both keep `tasks` as JSON text and
 * timestamps as integers (PostgreSQL BIGINT comes back as a string, hence Number()).
 */
import type { DelegationPatch, DelegationRow } from "../rows.js";

/** The columns a delegation patch may set (a patch is typed so; this keeps a stray key out of SQL). */
const PATCHABLE = new Set(["tasks", "status", "owner", "completed_at"]);

export function delegationFromColumns(r: Record<string, unknown>): DelegationRow {
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    id: r.id as string,
    principal: r.principal as string,
    origin_session_id: r.origin_session_id as string,
    kind: r.kind as string,
    tasks: JSON.parse(r.tasks as string),
    status: r.status as DelegationRow["status"],
    owner: r.owner as string,
    claimed_by: (r.claimed_by as string | null) ?? null,
    claim_expires_at: num(r.claim_expires_at),
    attempts: Number(r.attempts),
    context: (r.context as string | null | undefined) ?? null,
    resumes: Number(r.resumes ?? 0),
    delivered_session_id: (r.delivered_session_id as string | null) ?? null,
    delivered_message_id: (r.delivered_message_id as string | null) ?? null,
    created_at: Number(r.created_at),
    completed_at: num(r.completed_at),
    delivered_at: num(r.delivered_at),
  };
}

/** The columns of a new `delegations` row (`tasks` as JSON text). */
export function delegationToColumns(row: DelegationRow): Record<string, unknown> {
  return { ...row, tasks: JSON.stringify(row.tasks) };
}

/** The columns a delegation patch sets (undefined keys are left out; `tasks` as JSON text). */
export function delegationPatchToColumns(patch: DelegationPatch): Record<string, unknown> {
  const cols: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(patch)) {
    if (v !== undefined && PATCHABLE.has(k)) cols[k] = k === "tasks" ? JSON.stringify(v) : v;
  }
  return cols;
}
