/**
 * The row-keyed writes of a PostgreSQL group commit, many rows per statement (appends.ts does the
 * same for the append-only tables). A group commit's transaction holds the starts and ends of many
 * sessions' turns at once: per session a message insert, a message update, session updates, a seq
 * reservation, a delta-log compaction. Applied one statement each, 200 sessions' turn ends were
 * ~1,000 round trips in one transaction (each a parse, a plan and two context switches for the
 * server), most of PostgreSQL + Redis's extra CPU per frame beside SQLite. Here they are gathered
 * per row and sent as one statement per kind of write and set of columns, over `unnest` arrays
 * (named, so each pooled connection plans it once).
 *
 * Why this is the same transaction as applying them one by one, in order:
 * - Writes to one row are merged as they come: a later update's columns replace an earlier one's
 *   (an UPDATE sets plain values, so the row ends the same), an update of a message inserted earlier
 *   in the batch becomes part of its insert, two reservations of a session keep the larger (GREATEST),
 *   a compaction repeated is one. So every pending write is to a different row, and they commute.
 * - Any op not gathered here (session and lease inserts, hides, other tables) first sends what is
 *   pending, and then applies in place: it sees every write before it, and none after it. A message's
 *   session is inserted in place, so it precedes the message's insert.
 * - The gathered rows of the append-only tables (RowBatch) are written after these, as before; a
 *   compaction drops the message's gathered deltas when it is gathered (their order in the batch).
 */
import type { WriteOp } from "../write-ops.js";
import { messagePatchToColumns, messageToColumns, sessionPatchToColumns } from "../columns/sessions.js";
import type { RowBatch } from "./appends.js";
import type { Queryable } from "./apply-ops.js";

/** The gathered kinds; every other op applies in place (apply-ops.ts). */
export type GatheredOp = Extract<WriteOp, { op: "session.update" | "seq.reserve" | "message.insert" | "message.update" | "delta.compact" }>;

type Columns = Record<string, unknown>;

const BIGINT_COLUMNS = new Set(["started_at", "last_activity_at", "ended_at", "seq_reserved", "created_at", "created_seq"]);
const MESSAGE_COLUMNS = ["id", "session_id", "role", "content", "tool_calls", "tool_call_id", "display_kind", "display_metadata",
  "status", "created_at", "created_seq", "branch_of", "hidden_by", "parts"] as const;
/** Column names come from the store's own column maps, never from a caller; checked anyway. */
const COLUMN_NAME = /^[a-z_]+$/;

const arrayType = (col: string) => (BIGINT_COLUMNS.has(col) ? "bigint[]" : "text[]");

const MESSAGE_INSERT = {
  name: "tether_insert_messages",
  text: `INSERT INTO messages (${MESSAGE_COLUMNS.join(", ")})
    SELECT * FROM unnest(${MESSAGE_COLUMNS.map((c, i) => `$${i + 1}::${arrayType(c)}`).join(", ")})`,
};
const SEQ_RESERVE = {
  name: "tether_reserve_seqs",
  text: `UPDATE sessions s SET seq_reserved = GREATEST(s.seq_reserved, r.up_to)
    FROM unnest($1::text[], $2::bigint[]) AS r(id, up_to) WHERE s.id = r.id`,
};
const DELTA_COMPACT = {
  name: "tether_compact_deltas",
  text: `DELETE FROM message_deltas d USING unnest($1::text[], $2::text[]) AS x(session_id, message_id)
    WHERE d.session_id = x.session_id AND d.message_id = x.message_id`,
};

/** Update statements by table and columns, each named once per process (PostgreSQL cuts names at 63 bytes). */
const updates = new Map<string, { name: string; text: string }>();

/** `UPDATE table t SET c = v.c, … FROM unnest(ids, c…) v WHERE t.id = v.id`, for one set of columns. */
function updateStatement(table: "sessions" | "messages", cols: string[]): { name: string; text: string } {
  const key = `${table}:${cols.join(",")}`;
  let statement = updates.get(key);
  if (statement) return statement;
  for (const c of cols) if (!COLUMN_NAME.test(c)) throw new Error(`not a column: ${c}`);
  const arrays = cols.map((c, i) => `$${i + 2}::${arrayType(c)}`).join(", ");
  const sets = cols.map((c) => `${c} = v.${c}`).join(", ");
  statement = {
    name: `tether_update_${updates.size + 1}`,
    text: `UPDATE ${table} t SET ${sets} FROM unnest($1::text[], ${arrays}) AS v(id, ${cols.join(", ")}) WHERE t.id = v.id`,
  };
  updates.set(key, statement);
  return statement;
}

export class OpRuns {
  private sessionUpdates = new Map<string, Columns>();
  /** In batch order; a duplicate id stays a duplicate (the INSERT fails, as the second would). */
  private messageInserts: Columns[] = [];
  /** Message id → its (latest) pending insert, which later updates of it join. */
  private inserted = new Map<string, Columns>();
  private messageUpdates = new Map<string, Columns>();
  private seqReserves = new Map<string, number>();
  private compacts = new Map<string, [string, string]>();
  private pending = false;

  /** True when `op` is one of the gathered kinds (a message with attachments is not: its blobs are referred in place). */
  static gathers(op: WriteOp): op is GatheredOp {
    switch (op.op) {
      case "session.update":
      case "seq.reserve":
      case "message.update":
      case "delta.compact":
        return true;
      case "message.insert":
        return !op.row.parts;
      default:
        return false;
    }
  }

  /** Gathers `op`, merged with the pending write to its row if there is one. */
  add(op: GatheredOp, batch: RowBatch): void {
    this.pending = true;
    switch (op.op) {
      case "session.update":
        return merge(this.sessionUpdates, op.id, sessionPatchToColumns(op.patch));
      case "message.update": {
        const cols = messagePatchToColumns(op.patch);
        const inserted = this.inserted.get(op.id);
        if (inserted) Object.assign(inserted, cols);
        else merge(this.messageUpdates, op.id, cols);
        return;
      }
      case "message.insert": {
        // An update gathered before the insert found no row, as it would have in place.
        this.messageUpdates.delete(op.row.id);
        const cols = messageToColumns(op.row);
        this.messageInserts.push(cols);
        this.inserted.set(op.row.id, cols);
        return;
      }
      case "seq.reserve":
        this.seqReserves.set(op.session_id, Math.max(this.seqReserves.get(op.session_id) ?? 0, op.upTo));
        return;
      case "delta.compact":
        // The message's appends gathered so far go now, as its stored rows will.
        batch.dropDeltasOf(op.session_id, op.message_id);
        this.compacts.set(`${op.session_id}\n${op.message_id}`, [op.session_id, op.message_id]);
        return;
    }
  }

  /** Sends every pending write: one statement per kind and set of columns. */
  async flush(c: Queryable): Promise<void> {
    if (!this.pending) return;
    const { sessionUpdates, messageInserts, messageUpdates, seqReserves, compacts } = this;
    this.sessionUpdates = new Map();
    this.messageInserts = [];
    this.inserted = new Map();
    this.messageUpdates = new Map();
    this.seqReserves = new Map();
    this.compacts = new Map();
    this.pending = false;
    if (messageInserts.length > 0) {
      await c.query({ ...MESSAGE_INSERT, values: MESSAGE_COLUMNS.map((col) => messageInserts.map((r) => r[col] ?? null)) });
    }
    await sendUpdates(c, "messages", messageUpdates);
    await sendUpdates(c, "sessions", sessionUpdates);
    if (seqReserves.size > 0) await c.query({ ...SEQ_RESERVE, values: [[...seqReserves.keys()], [...seqReserves.values()]] });
    if (compacts.size > 0) {
      const pairs = [...compacts.values()];
      await c.query({ ...DELTA_COMPACT, values: [pairs.map((p) => p[0]), pairs.map((p) => p[1])] });
    }
  }
}

/** A later write of a row's column replaces the earlier one (as the later UPDATE would). */
function merge(into: Map<string, Columns>, id: string, cols: Columns): void {
  const had = into.get(id);
  if (had) Object.assign(had, cols);
  else into.set(id, { ...cols });
}

/** The rows' updates, one statement per set of columns (rows setting nothing send nothing). */
async function sendUpdates(c: Queryable, table: "sessions" | "messages", rows: Map<string, Columns>): Promise<void> {
  const shapes = new Map<string, { cols: string[]; ids: string[]; values: unknown[][] }>();
  for (const [id, cols] of rows) {
    const names = Object.keys(cols).sort();
    if (names.length === 0) continue;
    const key = names.join(",");
    let shape = shapes.get(key);
    if (!shape) shapes.set(key, (shape = { cols: names, ids: [], values: names.map(() => []) }));
    shape.ids.push(id);
    for (let i = 0; i < names.length; i++) shape.values[i]!.push(cols[names[i]!]);
  }
  for (const s of shapes.values()) await c.query({ ...updateStatement(table, s.cols), values: [s.ids, ...s.values] });
}
