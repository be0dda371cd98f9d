/**
 * SQLite's op switch: every WriteOp of a `commit` is applied here, inside the store's transaction.
 * The switch is exhaustive (`unsupportedOp` takes `never`), so a new kind of write cannot be added
 * without a case — in this store and in PostgreSQL's (postgres/apply-ops.ts), which has the same shape.
 */
import type Database from "better-sqlite3";
import { messagePatchToColumns, messageToColumns, sessionPatchToColumns, sessionToColumns } from "../columns/sessions.js";
import { FenceError } from "../errors.js";
import { DeltaAppends, DeltaBuckets } from "./appends.js";
import type { BlobTables } from "./blob-tables.js";
import { unsupportedOp, type A2ATaskOp, type QueuedTurnOp, type DelegationOp, type EnvelopeOp, type HttpOp, type ProcessOp, type RequestOp, type WriteOp } from "../write-ops.js";

type Statement = Database.Statement;

/** The tables that apply their own ops (http-tables.ts, delegation-tables.ts, request-tables.ts). */
interface OpTables<O> {
  apply(op: O): void;
}

/** Ops that neither read nor delete delta-log rows: pending rows may wait past them. */
const KEEPS_DELTAS_PENDING: ReadonlySet<WriteOp["op"]> = new Set(["delta.append", "lease.fence", "event.append", "delta.compact"]);

export class SqliteWrites {
  private readonly insertSession: Statement;
  private readonly reserveSeq: Statement;
  private readonly insertMessage: Statement;
  private readonly hideMessages: Statement;
  private readonly showMessages: Statement;
  private readonly insertEvent: Statement;
  /** Delta-log rows, inserted many to a statement (appends.ts). */
  private readonly deltas: DeltaAppends;
  /** The delta log's cleanup (see DeltaLogSweep). */
  readonly deltaSweep: DeltaLogSweep;
  /** The index bucket of each appended delta-log row (appends.ts). */
  private readonly buckets: DeltaBuckets;
  private readonly insertIdempotency: Statement;
  private readonly fence: Statement;
  private readonly insertLease: Statement;
  /** Patches name a handful of known columns; the statement is cached per column set. */
  private readonly updates = new Map<string, Statement>();
  /**
   * Leases already checked (session id → "owner token"), kept while nobody can have changed them:
   * a streaming session's every write carries the same fence, and re-reading the lease for each
   * unit was one SELECT per delta beside its INSERT. Kept across transactions while the file's
   * `data_version` stays put (no other connection — another process — committed anything) and this
   * connection wrote no lease outside a commit (`leasesChanged`); inside a commit only a
   * `lease.insert` writes one, and it forgets its session's entry. A rolled-back commit forgets all.
   */
  private readonly fencesChecked = new Map<string, string>();
  private fencesAtVersion = -1;
  private readonly dataVersion: Statement;

  constructor(
    private readonly db: Database.Database,
    private readonly http: OpTables<HttpOp>,
    private readonly delegations: OpTables<DelegationOp>,
    private readonly requests: OpTables<RequestOp>,
    private readonly processes: OpTables<ProcessOp>,
    private readonly envelopes: OpTables<EnvelopeOp>,
    private readonly a2aTasks: OpTables<A2ATaskOp>,
    private readonly queuedTurns: OpTables<QueuedTurnOp>,
    private readonly blobs: BlobTables,
  ) {
    this.insertSession = db.prepare(
      `INSERT INTO sessions (id, principal, profile, title, parent_session_id, model, provider, model_config, flags, todo,
         started_at, last_activity_at, ended_at, end_reason, seq_reserved, active_turn)
       VALUES (@id, @principal, @profile, @title, @parent_session_id, @model, @provider, @model_config, @flags, @todo,
         @started_at, @last_activity_at, @ended_at, @end_reason, @seq_reserved, @active_turn)`,
    );
    this.reserveSeq = db.prepare(`UPDATE sessions SET seq_reserved = MAX(seq_reserved, ?) WHERE id = ?`);
    this.insertMessage = db.prepare(
      `INSERT INTO messages (id, session_id, role, content, tool_calls, tool_call_id, display_kind,
         display_metadata, status, created_at, created_seq, branch_of, hidden_by, parts)
       VALUES (@id, @session_id, @role, @content, @tool_calls, @tool_call_id, @display_kind,
         @display_metadata, @status, @created_at, @created_seq, @branch_of, @hidden_by, @parts)`,
    );
    this.hideMessages = db.prepare(
      `UPDATE messages SET hidden_by = ? WHERE session_id = ? AND hidden_by IS NULL AND created_seq >= ?`,
    );
    this.showMessages = db.prepare(`UPDATE messages SET hidden_by = NULL WHERE session_id = ? AND hidden_by = ?`);
    this.insertEvent = db.prepare(
      `INSERT INTO events (session_id, seq, type, payload, turn_id, trace_id, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    this.deltas = new DeltaAppends(db);
    this.buckets = new DeltaBuckets(db);
    this.deltaSweep = new DeltaLogSweep(db);
    this.insertIdempotency = db.prepare(
      `INSERT OR IGNORE INTO idempotency (session_id, request_id, turn_id, trace_id, created_at)
       VALUES (?, ?, ?, ?, ?)`,
    );
    this.fence = db.prepare(`SELECT owner, token FROM leases WHERE session_id = ?`);
    this.dataVersion = db.prepare(`PRAGMA data_version`).pluck();
    this.insertLease = db.prepare(
      `INSERT INTO leases (session_id, owner, token, expires_at, detached) VALUES (?, ?, ?, ?, ?)`,
    );
  }

  /** A commit's transaction begins (its write lock held): another process's commit voids the checks. */
  beginTransaction(): void {
    this.deltas.reset();
    const version = this.dataVersion.get() as number;
    if (version === this.fencesAtVersion) return;
    this.fencesChecked.clear();
    this.fencesAtVersion = version;
  }

  /** This connection wrote leases outside a commit (acquire, release, purge), or a commit rolled back. */
  leasesChanged(): void {
    this.fencesChecked.clear();
  }

  /** The end of a commit's ops, still inside its transaction. */
  endTransaction(): void {
    if (this.deltas.pending > 0) this.deltas.flush();
    this.deltaSweep.afterOps();
  }

  apply(op: WriteOp): void {
    // Pending delta rows go in before any op that could read or delete them (a streaming
    // commit is fences, deltas and event rows; anything else flushes first).
    if (this.deltas.pending > 0 && !KEEPS_DELTAS_PENDING.has(op.op)) this.deltas.flush();
    switch (op.op) {
      // First: one per durable frame, by far the most common op.
      case "event.append": {
        const r = op.row;
        this.insertEvent.run(r.session_id, r.seq, r.type, r.payload, r.turn_id, r.trace_id, r.created_at);
        return;
      }
      // Second: one per streaming message per commit.
      case "delta.append":
        this.deltas.add(op.session_id, op.message_id, op.seq, op.text, this.buckets.next());
        this.deltaSweep.appended(op.message_id);
        return;
      case "delta.compact":
        this.deltaSweep.completed(op.message_id);
        return;
      case "session.insert":
        this.insertSession.run(sessionToColumns(op.row));
        return;
      case "session.update":
        return this.update("sessions", op.id, sessionPatchToColumns(op.patch));
      case "seq.reserve":
        this.reserveSeq.run(op.upTo, op.session_id);
        return;
      case "message.insert":
        this.insertMessage.run(messageToColumns(op.row));
        if (op.row.parts) this.blobs.refer(op.row);
        return;
      case "message.update":
        return this.update("messages", op.id, messagePatchToColumns(op.patch));
      case "messages.hide":
        this.hideMessages.run(op.hidden_by, op.session_id, op.from_seq);
        return;
      case "messages.show":
        this.showMessages.run(op.session_id, op.hidden_by);
        return;
      case "idempotency.put": {
        const r = op.row;
        this.insertIdempotency.run(r.session_id, r.request_id, r.turn_id, r.trace_id, r.created_at);
        return;
      }
      case "lease.fence": {
        const key = `${op.owner} ${op.token}`;
        if (this.fencesChecked.get(op.session_id) === key) return;
        const held = this.fence.get(op.session_id) as { owner: string; token: number } | undefined;
        if (!held || held.owner !== op.owner || held.token !== op.token) throw new FenceError(op.session_id, op.token);
        this.fencesChecked.set(op.session_id, key);
        return;
      }
      case "lease.insert": {
        const r = op.row;
        this.fencesChecked.delete(r.session_id);
        this.insertLease.run(r.session_id, r.owner, r.token, r.expires_at, r.detached ? 1 : 0);
        return;
      }
      case "response.insert":
      case "response.update":
      case "response.delete":
      case "http_idempotency.complete":
      case "http_idempotency.release":
        return this.http.apply(op);
      case "delegation.insert":
      case "delegation.update":
      case "delegation.deliver":
        return this.delegations.apply(op);
      case "request.insert":
      case "request.update":
      case "approval.put":
      case "approval.delete":
        return this.requests.apply(op);
      case "process.insert":
      case "process.update":
        return this.processes.apply(op);
      case "envelope.insert":
      case "envelope.update":
      case "envelope.deliver":
        return this.envelopes.apply(op);
      case "a2a_task.put":
        return this.a2aTasks.apply(op);
      case "queued_turn.put":
      case "queued_turn.delete":
      case "queued_turn.clear":
        return this.queuedTurns.apply(op);
      case "blob.put":
        return this.blobs.put(op.row);
      default:
        return unsupportedOp(op, "SqliteStore");
    }
  }

  private update(table: "sessions" | "messages", id: string, cols: Record<string, unknown>): void {
    const keys = Object.keys(cols);
    if (keys.length === 0) return;
    const cacheKey = `${table}:${keys.join(",")}`;
    let stmt = this.updates.get(cacheKey);
    if (!stmt) {
      const sets = keys.map((k) => `${k} = @${k}`).join(", ");
      stmt = this.db.prepare(`UPDATE ${table} SET ${sets} WHERE id = @__id`);
      this.updates.set(cacheKey, stmt);
    }
    stmt.run({ ...cols, __id: id });
  }
}

/**
 * Dropping the delta log of completed messages in sweeps rather than one message's rows at a
 * time: those are spread over the pages of every session that streamed alongside, and deleting
 * them as each message completes would dirty a page per row again. A sweep, inside a commit's
 * transaction, deletes every row whose message is no longer `streaming` (a primary-key lookup per
 * row), so it is also what clears another process's or a crashed process's rows. It runs after
 * as many completions as this process has messages streaming (at least `SWEEP_EVERY`): the log
 * then holds about one turn's worth of rows per live stream, each sweep scans about that much,
 * and that is paid once per that many completions. Reads only ever use the rows of messages still
 * streaming, so a completed message's rows are invisible between its completion and the sweep.
 */
export class DeltaLogSweep {
  private readonly open = new Set<string>();
  private completions = 0;
  private readonly sweep: Statement;

  constructor(db: Database.Database) {
    this.sweep = db.prepare(
      `DELETE FROM message_deltas
        WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = message_deltas.message_id AND m.status = 'streaming')`,
    );
  }

  appended(messageId: string): void {
    this.open.add(messageId);
  }

  completed(messageId: string): void {
    this.open.delete(messageId);
    this.completions++;
  }

  /** Called at the end of every commit's transaction (after its ops). */
  afterOps(): void {
    if (this.completions < Math.max(SWEEP_EVERY, this.open.size)) return;
    this.completions = 0;
    this.sweep.run();
  }
}

/** The fewest completions between two sweeps. */
const SWEEP_EVERY = 32;
