/**
 * Decoding a `delegations` row, the same for every store: both keep `tasks` as JSON text and
 * timestamps as integers (PostgreSQL BIGINT comes back as a string, hence Number()).
 */
import type { DelegationRow } from "./types.js";

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
