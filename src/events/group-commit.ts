/**
 * Group commit: writes enqueued in the same tick go to the store as one transaction. This is what
 * lets one SQLite file keep up with many streaming sessions: the cost of a commit is paid once
 * per batch, not once per event. Commits run one at a time and in enqueue order, so a later
 * write can never land before an earlier one (seq order on disk = seq order on the wire).
 *
 * `submit(ops, done)` takes a callback so the hot path (one durable frame = one unit) allocates no
 * promise per write; `enqueue(ops)` is the promise form for everything else.
 */
import type { Store, WriteOp } from "../store/types.js";
import { tracing } from "../lib/tracing.js";
import { recordSlowCommit } from "./commit-tracing.js";
import type { StoreHealth } from "./store-health.js";

export type CommitDone<C = undefined> = (err: unknown, ctx: C) => void;

/**
 * Asked right before a unit's writes go to the store: a reason (an error) to leave them out, or
 * undefined. Every unit submitted before it has settled by then, except those of its own batch:
 * they commit with it, or, when that batch fails, each is retried alone first and it is asked again.
 */
export type CommitGuard = () => unknown;

/** A batch's guarded units by index: the guard, and the reason it gave to leave the unit out. */
type BatchGuards = Map<number, { guard: CommitGuard; refused: unknown }>;

export class GroupCommitter {
  /**
   * Pending units as three parallel arrays (ops, callback, callback context) rather than one object
   * per unit: a streaming turn submits one unit per durable frame, and a shared callback with a
   * context argument allocates nothing per frame (no unit object, no closure).
   */
  private ops: Array<readonly WriteOp[]> = [];
  private dones: Array<CommitDone<any>> = [];
  private ctxs: unknown[] = [];
  /** Guards of waiting units by ticket: rare (a turn's end), so a map, nothing per plain unit. */
  private guards: Map<number, CommitGuard> | null = null;
  private scheduled = false;
  private running: Promise<void> | null = null;
  /** Units submitted / taken into a batch so far: a unit's ticket is its submit count. */
  private submitted = 0;
  private taken = 0;

  constructor(
    private readonly store: Store,
    private readonly maxBatchOps = 10_000,
    /** Every batch's commit latency and whether it failed (`tether_store_commit_duration_seconds`). */
    private readonly onCommitted?: (seconds: number, failed: boolean) => void,
    /** Told every batch's outcome: logs the store going down and coming back, once each (store-health.ts). */
    readonly health?: StoreHealth,
  ) {}

  /**
   * `done(null, ctx)` once `ops` are committed (all together, in one transaction), `done(err, ctx)`
   * if not. Pass a long-lived `done` and the per-write state as `ctx` to allocate nothing.
   */
  submit<C = undefined>(ops: readonly WriteOp[], done: CommitDone<C>, ctx?: C, guard?: CommitGuard): number {
    this.ops.push(ops);
    this.dones.push(done);
    this.ctxs.push(ctx);
    if (guard) (this.guards ??= new Map()).set(this.submitted, guard);
    this.schedule();
    return this.submitted++;
  }

  /**
   * True while the unit of `ticket` (what `submit` returned) waits for its batch: its ops are read
   * only when the batch is taken, so until then the submitter may still add to them (the event log
   * joins a message's deltas into one delta-log row this way).
   */
  waiting(ticket: number): boolean {
    return ticket >= this.taken;
  }

  /** Resolves when `ops` are committed (all together, in one transaction). */
  enqueue(ops: readonly WriteOp[]): Promise<void> {
    return new Promise<void>((resolve, reject) => this.submit(ops, (err) => (err ? reject(err) : resolve())));
  }

  /** Resolves when everything enqueued so far is committed (or failed). */
  async drain(): Promise<void> {
    while (this.ops.length > 0 || this.running) {
      if (this.running) await this.running;
      else await this.runOnce();
    }
  }

  private schedule(): void {
    if (this.scheduled || this.running) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (!this.running) void this.runOnce();
    });
  }

  private runOnce(): Promise<void> {
    const run = this.commitBatch().finally(() => {
      this.running = null;
      if (this.ops.length > 0) this.schedule();
    });
    this.running = run;
    return run;
  }

  private async commitBatch(): Promise<void> {
    let count = 0;
    let n = 0;
    while (n < this.ops.length && (n === 0 || count + this.ops[n]!.length <= this.maxBatchOps)) {
      count += this.ops[n]!.length;
      n++;
    }
    if (n === 0) return;
    // Take the batch with one splice each: shift() per unit turns O(n²) on long queues.
    const ops = this.ops.splice(0, n);
    const dones = this.dones.splice(0, n);
    const ctxs = this.ctxs.splice(0, n);
    const guarded = this.guards ? askGuards(this.guards, ops, this.taken, n) : null;
    this.taken += n;
    let all: readonly WriteOp[];
    if (n === 1) {
      all = ops[0]!;
    } else {
      const flat: WriteOp[] = [];
      for (const unit of ops) for (const op of unit) flat.push(op);
      all = flat;
    }
    // A batch left with nothing to write (its one unit was refused) does not go to the store.
    if (all.length === 0 && guarded) {
      for (let i = 0; i < n; i++) settle(dones[i]!, ctxs[i], guarded.get(i)?.refused ?? null);
      return;
    }
    let failed: unknown = null;
    // Timed when traces are on (a slow commit becomes a span, commit-tracing.ts) or metrics are kept.
    const t = tracing();
    const timed = t.enabled || this.onCommitted !== undefined;
    const t0 = timed ? performance.now() : 0;
    const wall0 = t.enabled ? Date.now() : 0;
    try {
      await this.store.commit(all);
    } catch (err) {
      failed = err;
    }
    const ms = timed ? performance.now() - t0 : 0;
    this.onCommitted?.(ms / 1000, failed !== null);
    // A batch that failed is retried unit by unit below: those outcomes tell the health instead.
    if (failed === null || n === 1) this.health?.committed(failed);
    if (t.enabled) recordSlowCommit(t, this.store.kind, wall0, ms, all, failed);
    if (failed === null) {
      for (let i = 0; i < n; i++) settle(dones[i]!, ctxs[i], guarded?.get(i)?.refused ?? null);
      return;
    }
    if (n === 1) {
      settle(dones[0]!, ctxs[0], failed);
      return;
    }
    // One bad unit must not fail its neighbours: retry each alone, in order.
    for (let i = 0; i < n; i++) {
      // A guarded unit is asked again: a unit before it in this batch may just have failed.
      const g = guarded?.get(i);
      const refused = g ? (g.refused ?? g.guard()) : undefined;
      if (refused !== undefined && refused !== null) {
        settle(dones[i]!, ctxs[i], refused);
        continue;
      }
      try {
        await this.store.commit(ops[i]!);
        this.health?.committed(null);
        settle(dones[i]!, ctxs[i], null);
      } catch (unitErr) {
        this.health?.committed(unitErr);
        settle(dones[i]!, ctxs[i], unitErr);
      }
    }
  }
}

/**
 * Asks the guards of the units a batch takes (tickets `first`…`first + n - 1`); a refused unit's
 * writes are left out of the batch (its ops become empty), and it settles with the reason, in order.
 */
function askGuards(guards: Map<number, CommitGuard>, ops: Array<readonly WriteOp[]>, first: number, n: number): BatchGuards | null {
  let out: BatchGuards | null = null;
  for (let i = 0; i < n && guards.size > 0; i++) {
    const guard = guards.get(first + i);
    if (!guard) continue;
    guards.delete(first + i);
    const refused = guard() ?? null;
    if (refused !== null) ops[i] = [];
    (out ??= new Map()).set(i, { guard, refused });
  }
  return out;
}

function settle(done: CommitDone<any>, ctx: unknown, err: unknown): void {
  try {
    done(err, ctx);
  } catch {
    // A callback's own failure is its caller's business; the committer keeps going.
  }
}
