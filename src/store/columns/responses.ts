/**
 * Decoding a `responses` row, the same for every store: SQLite keeps booleans as 0/1 and PostgreSQL
 * as booleans; both keep `metadata` and `echo` as JSON text and timestamps as integers (PostgreSQL BIGINT
 * comes back as a string, hence Number()).
 */
import type { ResponsePatch, ResponseRow } from "../rows.js";

/** How a backend stores a boolean: SQLite as 0/1, PostgreSQL as itself. */
export type BooleanColumn = (value: boolean) => unknown;

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
    echo: r.echo ? JSON.parse(r.echo as string) : null,
    cancel_requested: flag(r.cancel_requested),
    result: (r.result as string | null) ?? null,
    created_at: Number(r.created_at),
    completed_at: r.completed_at === null || r.completed_at === undefined ? null : Number(r.completed_at),
  };
}

/** The columns of a new `responses` row (`metadata` as JSON text). */
export function responseToColumns(row: ResponseRow, bool: BooleanColumn): Record<string, unknown> {
  return {
    ...row,
    background: bool(row.background),
    stored: bool(row.stored),
    cancel_requested: bool(row.cancel_requested),
    metadata: row.metadata ? JSON.stringify(row.metadata) : null,
    echo: row.echo ? JSON.stringify(row.echo) : null,
  };
}

/** The columns a response patch sets, in a fixed order (undefined keys are left out). */
export function responsePatchToColumns(patch: ResponsePatch, bool: BooleanColumn): Record<string, unknown> {
  const cols: Record<string, unknown> = {};
  if (patch.status !== undefined) cols.status = patch.status;
  if (patch.cancel_requested !== undefined) cols.cancel_requested = bool(patch.cancel_requested);
  if (patch.result !== undefined) cols.result = patch.result;
  if (patch.completed_at !== undefined) cols.completed_at = patch.completed_at;
  if (patch.turn_id !== undefined) cols.turn_id = patch.turn_id;
  if (patch.after_seq !== undefined) cols.after_seq = patch.after_seq;
  return cols;
}
