/**
 * Decoding a `responses` row, the same for every store: SQLite keeps booleans as 0/1 and PostgreSQL
 * as booleans; both keep `metadata` as JSON text and timestamps as integers (PostgreSQL BIGINT
 * comes back as a string, hence Number()).
 */
import type { ResponseRow } from "./types.js";

const flag = (v: unknown): boolean => v === true || v === 1;

export function responseFromColumns(r: Record<string, unknown>): ResponseRow {
  return {
    id: r.id as string,
    principal: r.principal as string,
    session_id: r.session_id as string,
    turn_id: r.turn_id as string,
    after_seq: Number(r.after_seq),
    model: r.model as string,
    status: r.status as string,
    background: flag(r.background),
    stored: flag(r.stored),
    previous_response_id: (r.previous_response_id as string | null) ?? null,
    instructions: (r.instructions as string | null) ?? null,
    metadata: r.metadata ? JSON.parse(r.metadata as string) : null,
    cancel_requested: flag(r.cancel_requested),
    result: (r.result as string | null) ?? null,
    created_at: Number(r.created_at),
    completed_at: r.completed_at === null || r.completed_at === undefined ? null : Number(r.completed_at),
  };
}
