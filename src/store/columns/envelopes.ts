/**
 * Decoding an `agent_envelopes` row, the same for every store: timestamps as integers (PostgreSQL
 * BIGINT comes back as a string, hence Number()).
 */
import type { EnvelopePatch, EnvelopeRow } from "../rows.js";

/** The columns an envelope patch may set (a patch is typed so; this keeps a stray key out of SQL). */
const PATCHABLE = new Set([
  "status", "attempts", "next_attempt_at", "last_error", "recipient_session_id", "recipient_turn_id", "reply", "reply_status", "reanswers", "sent_at", "replied_at",
]);

/** Every column, in the order both stores insert them. */
export const ENVELOPE_COLUMNS = [
  "id", "principal", "from_session_id", "from_profile", "from_name", "to_address", "to_name", "peer", "text", "status",
  "attempts", "next_attempt_at", "claimed_by", "claim_expires_at", "last_error", "recipient_session_id", "recipient_turn_id",
  "reply", "created_at", "sent_at", "replied_at", "delivered_at", "delivered_session_id", "delivered_message_id", "reply_status", "reanswers",
] as const;

export function envelopeFromColumns(r: Record<string, unknown>): EnvelopeRow {
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  const str = (v: unknown) => (v === null || v === undefined ? null : (v as string));
  return {
    id: r.id as string,
    principal: r.principal as string,
    from_session_id: r.from_session_id as string,
    from_profile: r.from_profile as string,
    from_name: r.from_name as string,
    to: r.to_address as string,
    to_name: r.to_name as string,
    peer: str(r.peer),
    text: r.text as string,
    status: r.status as EnvelopeRow["status"],
    attempts: Number(r.attempts),
    next_attempt_at: Number(r.next_attempt_at),
    claimed_by: str(r.claimed_by),
    claim_expires_at: num(r.claim_expires_at),
    last_error: str(r.last_error),
    recipient_session_id: str(r.recipient_session_id),
    recipient_turn_id: str(r.recipient_turn_id),
    reply: str(r.reply),
    reply_status: str(r.reply_status) as EnvelopeRow["reply_status"],
    reanswers: Number(r.reanswers ?? 0),
    created_at: Number(r.created_at),
    sent_at: num(r.sent_at),
    replied_at: num(r.replied_at),
    delivered_at: num(r.delivered_at),
    delivered_session_id: str(r.delivered_session_id),
    delivered_message_id: str(r.delivered_message_id),
  };
}

/** The column values of a new row, in ENVELOPE_COLUMNS order (`to` is stored as `to_address`). */
export function envelopeToValues(row: EnvelopeRow): unknown[] {
  const cols: Record<string, unknown> = { ...row, to_address: row.to };
  return ENVELOPE_COLUMNS.map((c) => cols[c] ?? null);
}

/** The columns a patch sets (undefined keys are left out). */
export function envelopePatchToColumns(patch: EnvelopePatch): Record<string, unknown> {
  const cols: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(patch)) if (v !== undefined && PATCHABLE.has(k)) cols[k] = v;
  return cols;
}
