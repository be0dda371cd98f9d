/**
 * Retention: deleting sessions ended long ago, with everything they own, in steps small enough
 * that the hot path never waits behind one. Optional on a Store (like `delegations`); SQLite and
 * PostgreSQL implement it.
 */
import { EndReason } from "../protocol/index.js";

/** An ended session the job may delete (what it needs to decide, nothing more). */
export interface EndedSession {
  id: string;
  ended_at: number;
  end_reason: string | null;
  /** Set on a session compression ended: its continuation (the lineage is deleted as one). */
  continued_in: string | null;
}

export type PurgeStep =
  /** Rows are left: call again. */
  | "more"
  /** The session and everything it owned are gone. */
  | "deleted"
  /** Not deleted: missing, reopened, or ended after the cutoff (a resume won the race). */
  | "skipped";

export interface RetentionStore {
  /** Sessions with `ended_at <= endedBefore`, oldest end first (then id), after the cursor, at most `limit`. */
  listEndedBefore(endedBefore: number, limit: number, after?: { ended_at: number; id: string }): Promise<EndedSession[]>;
  /**
   * One step of deleting a session, as one transaction of at most ~`maxRows` deleted rows: its
   * events and messages first, and once none is left its records (idempotency, responses, lease,
   * delegations it started) and the session row itself. The first step re-checks that the session
   * is still ended at or before `endedBefore` and marks it `end_reason: "retention"` (not
   * recoverable), so a resume can no longer reopen it while it is being deleted.
   */
  purgeSession(id: string, endedBefore: number, maxRows: number): Promise<PurgeStep>;
  /** Deletes at most `limit` finished A2A tasks last changed before `updatedBefore`; returns how many. */
  purgeA2ATasks(updatedBefore: number, limit: number): Promise<number>;
  /**
   * Gives at most `maxPages` pages of the space deleted rows left behind back to the file system,
   * as one short transaction; the bytes released (0 = nothing left to release). SQLite only
   * (a store in incremental auto-vacuum mode); PostgreSQL's autovacuum does this on its own.
   */
  releaseSpace?(maxPages: number): Promise<number>;
}

/** The end_reason of a session being deleted by retention. */
export const RETENTION_END_REASON = EndReason.Retention;
