/**
 * The append-only tables' side of PostgreSQL commits (sqlite/appends.ts is SQLite's): the rows of
 * one commit that go to the server as one statement per table. A streaming batch is
 * mostly `event.append` and `delta.append` ops of many sessions (plus a `lease.fence` per unit):
 * applied one statement each, a batch of 200 units cost ~400 round trips to the server, each a
 * parse, a plan and two context switches on a shared machine. Here the fences are checked against
 * the lease rows commit() already locks (no query), and the appended rows are gathered and
 * written at the end of the transaction as one `INSERT … SELECT FROM unnest(…)` per table (arrays,
 * so one prepared statement whatever the batch size, and no 65,535-parameter limit).
 *
 * Why deferring them to the end is the same transaction as applying them in place: nothing in a
 * commit reads `events` or `message_deltas`, the rows they reference (sessions) are inserted by
 * earlier ops of the batch or already exist, and the only op that touches those tables besides an
 * append — `delta.compact`, which deletes a message's log — drops that message's gathered rows
 * too. A failing row (a duplicate seq) fails the INSERT, so the whole transaction, as before.
 */
import { FenceError } from "../errors.js";
import type { EventRow, LeaseRow } from "../rows.js";
import type { WriteOp } from "../write-ops.js";
import type { Queryable } from "./apply-ops.js";

/** Named, so each pooled connection parses and plans them once. */
const INSERT_EVENTS = {
  name: "tether_insert_events",
  text: `INSERT INTO events (session_id, seq, type, payload, turn_id, trace_id, created_at)
         SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[])`,
};
const INSERT_DELTAS = {
  name: "tether_insert_deltas",
  text: `INSERT INTO message_deltas (session_id, message_id, seq, text)
         SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[])`,
};

export class RowBatch {
  private readonly ev = { session_id: [] as string[], seq: [] as number[], type: [] as string[], payload: [] as string[],
    turn_id: [] as Array<string | null>, trace_id: [] as Array<string | null>, created_at: [] as number[] };
  private dl = { session_id: [] as string[], message_id: [] as string[], seq: [] as number[], text: [] as string[] };
  /** session id → the lease row as this transaction sees it (locked by commit(), or inserted by it). */
  private readonly leases = new Map<string, { owner: string; token: number }>();

  /** The lease rows commit() share-locked: nobody can change them before this transaction ends. */
  lockedLeases(rows: ReadonlyArray<{ session_id: string; owner: string; token: number }>): void {
    for (const r of rows) this.leases.set(r.session_id, { owner: r.owner, token: r.token });
  }

  /** A `lease.insert` of this batch: a later fence of the same batch sees it, as it would in place. */
  leaseInserted(r: LeaseRow): void {
    this.leases.set(r.session_id, { owner: r.owner, token: r.token });
  }

  /** `lease.fence`: the whole transaction fails unless `owner` holds the lease with `token`. */
  checkFence(sessionId: string, owner: string, token: number): void {
    const held = this.leases.get(sessionId);
    if (!held || held.owner !== owner || held.token !== token) throw new FenceError(sessionId, token);
  }

  addEvent(r: EventRow): void {
    const e = this.ev;
    e.session_id.push(r.session_id);
    e.seq.push(r.seq);
    e.type.push(r.type);
    e.payload.push(r.payload);
    e.turn_id.push(r.turn_id);
    e.trace_id.push(r.trace_id);
    e.created_at.push(r.created_at);
  }

  addDelta(sessionId: string, messageId: string, seq: number, text: string): void {
    const d = this.dl;
    d.session_id.push(sessionId);
    d.message_id.push(messageId);
    d.seq.push(seq);
    d.text.push(text);
  }

  /** `delta.compact` deletes the message's stored log; its rows gathered so far go with it. */
  dropDeltasOf(sessionId: string, messageId: string): void {
    const d = this.dl;
    if (!d.message_id.includes(messageId)) return;
    const kept = { session_id: [] as string[], message_id: [] as string[], seq: [] as number[], text: [] as string[] };
    for (let i = 0; i < d.seq.length; i++) {
      if (d.session_id[i] === sessionId && d.message_id[i] === messageId) continue;
      kept.session_id.push(d.session_id[i]!);
      kept.message_id.push(d.message_id[i]!);
      kept.seq.push(d.seq[i]!);
      kept.text.push(d.text[i]!);
    }
    this.dl = kept;
  }

  /** The gathered rows as the parameters of APPEND_ONLY ($4–$14). */
  params(): unknown[] {
    const d = this.dl;
    const e = this.ev;
    return [d.session_id, d.message_id, d.seq, d.text, e.session_id, e.seq, e.type, e.payload, e.turn_id, e.trace_id, e.created_at];
  }

  /** Writes the gathered rows: at most one statement per table. */
  async flush(c: Queryable): Promise<void> {
    const d = this.dl;
    if (d.seq.length > 0) await c.query({ ...INSERT_DELTAS, values: [d.session_id, d.message_id, d.seq, d.text] });
    const e = this.ev;
    if (e.seq.length > 0) {
      await c.query({ ...INSERT_EVENTS, values: [e.session_id, e.seq, e.type, e.payload, e.turn_id, e.trace_id, e.created_at] });
    }
  }
}

/**
 * A commit of nothing but appends, their fences and seq reservations — what a streaming group
 * commit is, between the starts and ends of turns — is ONE statement (its own implicit
 * transaction): one round trip, not five (BEGIN, lease lock, two INSERTs, COMMIT). Every part of a
 * statement commits or none does. The fences: the leases are share-locked in session order (as the
 * transaction path locks them, so a takeover waits for this write), and a lease whose owner or
 * token differs calls `tether_fence_refused` (migration 13), which raises, aborting the statement.
 * CASE, not AND, so the function is reached only for such a row.
 */
const APPEND_ONLY = {
  name: "tether_commit_appends",
  text: `WITH fence AS (SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[]) AS f(session_id, owner, token)),
    held AS MATERIALIZED (SELECT session_id, owner, token FROM leases WHERE session_id = ANY($1::text[]) ORDER BY session_id FOR SHARE),
    deltas AS (INSERT INTO message_deltas (session_id, message_id, seq, text)
      SELECT * FROM unnest($4::text[], $5::text[], $6::bigint[], $7::text[])),
    appended AS (INSERT INTO events (session_id, seq, type, payload, turn_id, trace_id, created_at)
      SELECT * FROM unnest($8::text[], $9::bigint[], $10::text[], $11::text[], $12::text[], $13::text[], $14::bigint[])),
    reserved AS (UPDATE sessions s SET seq_reserved = GREATEST(s.seq_reserved, r.up_to)
      FROM unnest($15::text[], $16::bigint[]) AS r(id, up_to) WHERE s.id = r.id)
  SELECT count(*) AS refused FROM fence f LEFT JOIN held h ON h.session_id = f.session_id
   WHERE CASE WHEN h.owner IS DISTINCT FROM f.owner OR h.token IS DISTINCT FROM f.token
              THEN tether_fence_refused(f.session_id, f.token) ELSE FALSE END`,
};

/** The SQLSTATE `tether_fence_refused` raises (its DETAIL is the session id, its HINT the token). */
const FENCE_REFUSED = "TF001";

/** True when every op of the batch is one APPEND_ONLY can carry. */
export function appendsOnly(ops: readonly WriteOp[]): boolean {
  for (const op of ops) {
    if (op.op !== "event.append" && op.op !== "delta.append" && op.op !== "lease.fence" && op.op !== "seq.reserve") return false;
  }
  return true;
}

/** Writes an appendsOnly() batch as one statement; a stale fence fails it with FenceError. */
export async function commitAppends(c: Queryable, ops: readonly WriteOp[]): Promise<void> {
  const rows = new RowBatch();
  const fences = new Map<string, { session_id: string; owner: string; token: number }>();
  const reserves = new Map<string, number>();
  for (const op of ops) {
    if (op.op === "event.append") rows.addEvent(op.row);
    else if (op.op === "delta.append") rows.addDelta(op.session_id, op.message_id, op.seq, op.text);
    else if (op.op === "lease.fence") fences.set(`${op.session_id}\n${op.owner}\n${op.token}`, op);
    // GREATEST of one row's several reservations = the largest of them.
    else if (op.op === "seq.reserve") reserves.set(op.session_id, Math.max(reserves.get(op.session_id) ?? 0, op.upTo));
  }
  const f = [...fences.values()];
  try {
    await c.query({
      ...APPEND_ONLY,
      values: [f.map((x) => x.session_id), f.map((x) => x.owner), f.map((x) => x.token), ...rows.params(), [...reserves.keys()], [...reserves.values()]],
    });
  } catch (err) {
    const e = err as { code?: string; detail?: string; hint?: string };
    if (e.code === FENCE_REFUSED) throw new FenceError(e.detail ?? "", Number(e.hint));
    throw err;
  }
}
