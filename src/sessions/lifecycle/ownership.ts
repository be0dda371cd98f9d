/**
 * This process's identity in a shared store, and the sessions it owns.
 *
 * Every `tether serve` process beats a heartbeat row; a process silent for 3 beats is dead. A live
 * session is owned through a lease carrying a fencing token: every write of the owner carries the
 * token (`fenceOp`), so an owner that lost the lease (paused, partitioned, superseded) can never
 * write again. A beat also renews the owner's leases and tells it which ones it lost.
 */
import { hostname } from "node:os";
import type { Clock } from "../../lib/clock.js";
import { pidAlive } from "../../lib/pid-alive.js";
import type { LeaseResult, Store, WriteOp } from "../../store/types.js";
import { storage } from "../core/session-access.js";

/** A session's lease as this process sees it, for sessions not live here. */
export interface LeaseView {
  owner: string;
  /** The owner parked the session (its last viewer left). */
  detached: boolean;
  /** A live process holds it: the owner's heartbeat is fresh and the lease has not expired. */
  held: boolean;
}

export interface OwnershipOptions {
  store: Store;
  clock: Clock;
  /** Unique per process start. */
  processId: string;
  leaseTtlMs: number;
  heartbeatMs: number;
}

/** A process whose heartbeat is older than this many beats is dead. */
export const DEAD_AFTER_BEATS = 3;

export class Ownership {
  readonly processId: string;
  private readonly held = new Map<string, number>();
  /**
   * The fence op of each held session, made once per token: every write of a streaming session
   * carries it (one per delta), and the op is never changed once made.
   */
  private readonly fences = new Map<string, Extract<WriteOp, { op: "lease.fence" }>>();
  /**
   * Leases inserted with a new session's row in a commit not done yet (creating.ts does not wait
   * for it): a beat must not take a missing row for a lost lease, nor a direct write run before it.
   */
  private readonly inserting = new Map<string, Promise<void>>();
  private readonly startedAt: number;

  constructor(private readonly opts: OwnershipOptions) {
    this.processId = opts.processId;
    this.startedAt = opts.clock.now();
  }

  /** Whether a lease's holder is alive: its lease not expired, and its heartbeat not older than deadBefore(). */
  async holderAlive(lease: { owner: string; expires_at: number }): Promise<boolean> {
    const now = this.opts.clock.now();
    if (lease.expires_at < now) return false;
    const beat = await storage(() => this.opts.store.getHeartbeat(lease.owner));
    return beat !== null && beat.last_beat >= this.deadBefore(now);
  }

  /** Heartbeats older than this belong to dead processes. */
  deadBefore(now = this.opts.clock.now()): number {
    return now - DEAD_AFTER_BEATS * this.opts.heartbeatMs;
  }

  tokenOf(sessionId: string): number | undefined {
    return this.held.get(sessionId);
  }

  /**
   * Beats, renewing every lease this process holds, and returns the sessions whose lease it no
   * longer holds (taken over by another process): their runtimes must be dropped quietly.
   */
  async beat(): Promise<string[]> {
    await this.forgetDeadLocalProcesses();
    const now = this.opts.clock.now();
    await this.opts.store.beat(
      { id: this.processId, pid: process.pid, host: hostname(), started_at: this.startedAt, last_beat: now },
      now + this.opts.leaseTtlMs,
    );
    if (this.held.size === 0) return [];
    // What the read is checked against, taken before it: a lease inserted, taken or released while
    // it runs may be missing from it or stale in it. Only a lease this process held before the read,
    // still holds with the same token after it, and whose insert was not in flight, can be lost.
    // (A session created during the read was judged lost here once: dropped under its viewer.)
    const inserting = new Set(this.inserting.keys());
    const before = [...this.held];
    const rows = await this.opts.store.leasesOf(this.processId);
    const still = new Map(rows.map((r) => [r.session_id, r.token]));
    const lost: string[] = [];
    for (const [sessionId, token] of before) {
      if (still.get(sessionId) === token || inserting.has(sessionId) || this.held.get(sessionId) !== token) continue;
      lost.push(sessionId);
    }
    return lost;
  }

  /**
   * A process on this host whose pid is gone (or is a zombie: killed, not yet reaped) is dead now,
   * not in 3 beats: forgetting its heartbeat lets a restarted gateway resume the sessions of the
   * one that crashed at once. (Processes on other hosts can only be judged by their heartbeat's age.)
   */
  private async forgetDeadLocalProcesses(): Promise<void> {
    const host = hostname();
    for (const hb of await this.opts.store.listHeartbeats()) {
      if (hb.id === this.processId || hb.host !== host || pidAlive(hb.pid)) continue;
      await this.opts.store.removeHeartbeat(hb.id);
    }
  }

  /**
   * Who holds these sessions, in one store read. `held` uses the rules of `acquire`: a lease whose
   * owner is dead or that expired is takeable, so nobody holds it.
   */
  async leaseViews(sessionIds: readonly string[]): Promise<Map<string, LeaseView>> {
    if (sessionIds.length === 0) return new Map();
    const now = this.opts.clock.now();
    const rows = await this.opts.store.leaseStates(sessionIds, this.deadBefore(now));
    return new Map(
      rows.map((r) => [r.session_id, { owner: r.owner, detached: r.detached, held: r.owner_alive && r.expires_at >= now }]),
    );
  }

  /** The lease row for a session this process is creating, written in the creating transaction. */
  insertOp(sessionId: string): WriteOp {
    this.held.set(sessionId, 1);
    return {
      op: "lease.insert",
      row: {
        session_id: sessionId,
        owner: this.processId,
        token: 1,
        expires_at: this.opts.clock.now() + this.opts.leaseTtlMs,
        detached: false,
      },
    };
  }

  async acquire(sessionId: string, takeDetached: boolean): Promise<LeaseResult> {
    const now = this.opts.clock.now();
    const result = await this.opts.store.acquireLease({
      session_id: sessionId,
      owner: this.processId,
      now,
      ttlMs: this.opts.leaseTtlMs,
      deadBefore: this.deadBefore(now),
      takeDetached,
    });
    if (result.acquired) this.held.set(sessionId, result.token);
    return result;
  }

  /** The fencing check every write of an owned session carries. */
  fenceOp(sessionId: string): WriteOp | undefined {
    const token = this.held.get(sessionId);
    if (token === undefined) return undefined;
    const cached = this.fences.get(sessionId);
    if (cached?.token === token) return cached;
    const op = Object.freeze({ op: "lease.fence" as const, session_id: sessionId, owner: this.processId, token });
    this.fences.set(sessionId, op);
    return op;
  }

  /** The lease `insertOp` made is in a commit that settles with `committed` (not awaited by the creator). */
  insertCommitting(sessionId: string, committed: Promise<void>): void {
    const settled: Promise<void> = committed
      .catch(() => undefined)
      .finally(() => {
        if (this.inserting.get(sessionId) === settled) this.inserting.delete(sessionId);
      });
    this.inserting.set(sessionId, settled);
  }

  /** Settles once the lease insert of a session this process is creating is committed (at once when none is in flight). */
  async inserted(sessionId: string): Promise<void> {
    await this.inserting.get(sessionId);
  }

  async setDetached(sessionId: string, detached: boolean): Promise<void> {
    // Written straight to the store: after the lease row's own commit, or it would update nothing.
    await this.inserting.get(sessionId);
    const token = this.held.get(sessionId);
    if (token !== undefined) await this.opts.store.setLeaseDetached(sessionId, this.processId, token, detached);
  }

  async release(sessionId: string): Promise<void> {
    await this.inserting.get(sessionId);
    const token = this.held.get(sessionId);
    this.held.delete(sessionId);
    this.fences.delete(sessionId);
    if (token !== undefined) await this.opts.store.releaseLease(sessionId, this.processId, token);
  }

  /** Forgets a lease another process took: nothing to release. */
  forget(sessionId: string): void {
    this.held.delete(sessionId);
    this.fences.delete(sessionId);
  }

  async retire(): Promise<void> {
    await this.opts.store.removeHeartbeat(this.processId);
  }
}
