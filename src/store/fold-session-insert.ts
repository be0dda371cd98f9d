/**
 * A new session's row and what the same commit writes to it next — its seq reservation, the first
 * turn's `active_turn` and `last_activity_at` — as one INSERT with the final values, instead of an
 * INSERT and two UPDATEs of the row just written (each UPDATE also moving the row's entry in the
 * activity index). That commit is the one a stateless chat completion's first token waits behind.
 *
 * Only across ops that never read a session row's columns (the list below), and only patches of
 * plain columns set to a value: the row that results is the one the ops in order would have left.
 * Backend-neutral (ops in, ops out), so it sits beside the stores; the SQLite store applies it
 * (its commit pays per row write), PostgreSQL sends the batch as it is.
 */
import type { SessionRow } from "./rows.js";
import type { WriteOp } from "./write-ops.js";

/** Ops that may stand between the insert and a write folded into it: none reads the session row. */
const PASSES: ReadonlySet<WriteOp["op"]> = new Set(["lease.insert", "lease.fence", "event.append", "message.insert", "delta.append", "delta.compact", "idempotency.put"]);

/** The patch columns that fold: a value, as the UPDATE would write it. */
const FOLDABLE = new Set(["last_activity_at", "active_turn"]);

export function foldSessionInsert(ops: readonly WriteOp[]): readonly WriteOp[] {
  const at = ops.findIndex((op) => op.op === "session.insert");
  if (at < 0) return ops;
  const first = ops[at] as Extract<WriteOp, { op: "session.insert" }>;
  let row: SessionRow = first.row;
  const folded = new Set<number>();
  for (let i = at + 1; i < ops.length; i++) {
    const op = ops[i]!;
    if (op.op === "seq.reserve" && op.session_id === row.id) {
      row = { ...row, seq_reserved: Math.max(row.seq_reserved, op.upTo) };
    } else if (op.op === "session.update" && op.id === row.id && foldable(op.patch)) {
      const set = Object.fromEntries(Object.entries(op.patch).filter(([, v]) => v !== undefined));
      row = { ...row, ...set };
    } else if (PASSES.has(op.op)) {
      continue;
    } else {
      break;
    }
    folded.add(i);
  }
  if (folded.size === 0) return ops;
  return ops.flatMap((op, i) => (i === at ? [{ op: "session.insert" as const, row }] : folded.has(i) ? [] : [op]));
}

function foldable(patch: object): boolean {
  return Object.entries(patch).every(([k, v]) => v === undefined || (FOLDABLE.has(k) && v !== null && (k !== "last_activity_at" || typeof v === "number")));
}
