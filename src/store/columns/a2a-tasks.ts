/**
 * Decoding an `a2a_tasks` row, the same for every store (PostgreSQL BIGINT comes back as a
 * number through the pool's type parser; Number() keeps SQLite and it alike), and the rule both
 * stores' upsert writes in SQL: which A2A states are finished.
 */
import type { A2ATaskRow } from "../rows.js";

/** Every column, in the order both stores insert them. */
export const A2A_TASK_COLUMNS = ["id", "principal", "bot", "context_id", "state", "body", "owner", "claim_expires_at", "created_at", "updated_at"] as const;

/** A2A's terminal task states: a task in one of them is never changed again. */
export const FINISHED_A2A_STATES = ["completed", "failed", "canceled", "rejected"] as const;

/** `('completed', 'failed', …)`, for the SQL of both stores (constants, never input). */
export const FINISHED_A2A_STATES_SQL = `(${FINISHED_A2A_STATES.map((s) => `'${s}'`).join(", ")})`;

export function a2aTaskFromColumns(r: Record<string, unknown>): A2ATaskRow {
  return {
    id: r.id as string,
    principal: r.principal as string,
    bot: r.bot as string,
    context_id: r.context_id as string,
    state: r.state as string,
    body: r.body as string,
    owner: (r.owner as string | null) ?? null,
    claim_expires_at: r.claim_expires_at === null || r.claim_expires_at === undefined ? null : Number(r.claim_expires_at),
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
  };
}

export function a2aTaskToValues(row: A2ATaskRow): unknown[] {
  return A2A_TASK_COLUMNS.map((c) => row[c] ?? null);
}

/**
 * The ON CONFLICT clause of `a2a_task.put` (see write-ops.ts): both stores speak this SQL. The
 * update applies to the same principal's and bot's row only, never to a finished one, and an
 * unfinished state only from the claim's holder or once the claim lapsed.
 */
export const A2A_TASK_UPSERT = `ON CONFLICT (id) DO UPDATE SET state = excluded.state, body = excluded.body, owner = excluded.owner,
      claim_expires_at = excluded.claim_expires_at, updated_at = excluded.updated_at
    WHERE a2a_tasks.principal = excluded.principal AND a2a_tasks.bot = excluded.bot
      AND a2a_tasks.state NOT IN ${FINISHED_A2A_STATES_SQL}
      AND (excluded.state IN ${FINISHED_A2A_STATES_SQL} OR a2a_tasks.owner IS NULL OR a2a_tasks.owner = excluded.owner
           OR a2a_tasks.claim_expires_at < excluded.updated_at)`;
