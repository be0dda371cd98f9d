/**
 * PostgreSQL's op switch: every WriteOp of a `commit` is applied here, inside the store's
 * transaction, on the transaction's client. Exhaustive like SQLite's (sqlite/apply-ops.ts): a new
 * kind of write does not compile until both stores handle it. Appends and fences go through the
 * commit's RowBatch (appends.ts): one statement per table per commit, not one per row.
 */
import type pg from "pg";
import { messagePatchToColumns, messageToColumns, sessionPatchToColumns, sessionToColumns } from "../columns/sessions.js";
import type { IdempotencyRow, LeaseRow, MessageRow, SessionRow } from "../rows.js";
import { unsupportedOp, type A2ATaskOp, type QueuedTurnOp, type DelegationOp, type EnvelopeOp, type HttpOp, type ProcessOp, type RequestOp, type WriteOp } from "../write-ops.js";
import type { RowBatch } from "./appends.js";
import type { PgBlobTables } from "./blob-tables.js";

export type Queryable = Pick<pg.PoolClient, "query">;

/** The tables that apply their own ops (http-tables.ts, delegation-tables.ts, request-tables.ts). */
interface OpTables<O> {
  apply(c: Queryable, op: O): Promise<void>;
}

export class PgWrites {
  constructor(
    private readonly http: OpTables<HttpOp>,
    private readonly delegations: OpTables<DelegationOp>,
    private readonly requests: OpTables<RequestOp>,
    private readonly processes: OpTables<ProcessOp>,
    private readonly envelopes: OpTables<EnvelopeOp>,
    private readonly a2aTasks: OpTables<A2ATaskOp>,
    private readonly queuedTurns: OpTables<QueuedTurnOp>,
    private readonly blobs: PgBlobTables,
  ) {}

  /** Applies `op` now, or gathers it into `batch` (flushed by commit() before it commits). */
  async apply(c: Queryable, op: WriteOp, batch: RowBatch): Promise<void> {
    switch (op.op) {
      case "event.append":
        return batch.addEvent(op.row);
      case "delta.append":
        return batch.addDelta(op.session_id, op.message_id, op.seq, op.text);
      case "delta.compact":
        batch.dropDeltasOf(op.session_id, op.message_id);
        await c.query(`DELETE FROM message_deltas WHERE session_id = $1 AND message_id = $2`, [op.session_id, op.message_id]);
        return;
      case "session.insert":
        return insertSession(c, op.row);
      case "session.update":
        return updateColumns(c, "sessions", op.id, sessionPatchToColumns(op.patch));
      case "seq.reserve":
        await c.query(`UPDATE sessions SET seq_reserved = GREATEST(seq_reserved, $1) WHERE id = $2`, [op.upTo, op.session_id]);
        return;
      case "message.insert":
        await insertMessage(c, op.row);
        if (op.row.parts) await this.blobs.refer(c, op.row);
        return;
      case "message.update":
        return updateColumns(c, "messages", op.id, messagePatchToColumns(op.patch));
      case "messages.hide":
        await c.query(`UPDATE messages SET hidden_by = $1 WHERE session_id = $2 AND hidden_by IS NULL AND created_seq >= $3`, [
          op.hidden_by, op.session_id, op.from_seq,
        ]);
        return;
      case "messages.show":
        await c.query(`UPDATE messages SET hidden_by = NULL WHERE session_id = $1 AND hidden_by = $2`, [op.session_id, op.hidden_by]);
        return;
      case "idempotency.put":
        return insertIdempotency(c, op.row);
      case "lease.fence":
        return batch.checkFence(op.session_id, op.owner, op.token);
      case "lease.insert":
        await insertLease(c, op.row);
        return batch.leaseInserted(op.row);
      case "response.insert":
      case "response.update":
      case "response.delete":
      case "http_idempotency.complete":
      case "http_idempotency.release":
        return this.http.apply(c, op);
      case "delegation.insert":
      case "delegation.update":
      case "delegation.deliver":
        return this.delegations.apply(c, op);
      case "request.insert":
      case "request.update":
      case "approval.put":
      case "approval.delete":
        return this.requests.apply(c, op);
      case "process.insert":
      case "process.update":
        return this.processes.apply(c, op);
      case "envelope.insert":
      case "envelope.update":
      case "envelope.deliver":
        return this.envelopes.apply(c, op);
      case "a2a_task.put":
        return this.a2aTasks.apply(c, op);
      case "queued_turn.put":
      case "queued_turn.delete":
      case "queued_turn.clear":
        return this.queuedTurns.apply(c, op);
      case "blob.put":
        return this.blobs.put(c, op.row);
      default:
        return unsupportedOp(op, "PostgresStore");
    }
  }
}

/** `UPDATE table SET col = $1, … WHERE id = $n` for the patch's columns; nothing when it sets none. */
export async function updateColumns(c: Queryable, table: "sessions" | "messages" | "responses", id: string, cols: Record<string, unknown>): Promise<void> {
  const keys = Object.keys(cols);
  if (keys.length === 0) return;
  const sets = keys.map((k, i) => `${k} = $${i + 1}`).join(", ");
  await c.query(`UPDATE ${table} SET ${sets} WHERE id = $${keys.length + 1}`, [...keys.map((k) => cols[k]), id]);
}

async function insertSession(c: Queryable, row: SessionRow): Promise<void> {
  const r = sessionToColumns(row);
  await c.query(
    `INSERT INTO sessions (id, principal, profile, title, parent_session_id, model, provider, model_config, flags, todo,
       started_at, last_activity_at, ended_at, end_reason, seq_reserved, active_turn)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
    [r.id, r.principal, r.profile, r.title, r.parent_session_id, r.model, r.provider, r.model_config, r.flags, r.todo,
      r.started_at, r.last_activity_at, r.ended_at, r.end_reason, r.seq_reserved, r.active_turn],
  );
}

async function insertMessage(c: Queryable, row: MessageRow): Promise<void> {
  const r = messageToColumns(row);
  await c.query(
    `INSERT INTO messages (id, session_id, role, content, tool_calls, tool_call_id, display_kind, display_metadata,
       status, created_at, created_seq, branch_of, hidden_by, parts)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
    [r.id, r.session_id, r.role, r.content, r.tool_calls, r.tool_call_id, r.display_kind, r.display_metadata,
      r.status, r.created_at, r.created_seq, r.branch_of, r.hidden_by, r.parts],
  );
}

async function insertIdempotency(c: Queryable, r: IdempotencyRow): Promise<void> {
  await c.query(
    `INSERT INTO idempotency (session_id, request_id, turn_id, trace_id, created_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT DO NOTHING`,
    [r.session_id, r.request_id, r.turn_id, r.trace_id, r.created_at],
  );
}

async function insertLease(c: Queryable, r: LeaseRow): Promise<void> {
  await c.query(`INSERT INTO leases (session_id, owner, token, expires_at, detached) VALUES ($1, $2, $3, $4, $5)`, [
    r.session_id, r.owner, r.token, r.expires_at, r.detached,
  ]);
}
