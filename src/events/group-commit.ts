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

export type CommitDone = (err: unknown) => void;

interface Unit {
  ops: readonly WriteOp[];
  done: CommitDone;
}

export class GroupCommitter {
  private queue: Unit[] = [];
  private scheduled = false;
  private running: Promise<void> | null = null;

  constructor(
    private readonly store: Store,
    private readonly maxBatchOps = 10_000,
  ) {}

  /** `done(null)` once `ops` are committed (all together, in one transaction), `done(err)` if not. */
  submit(ops: readonly WriteOp[], done: CommitDone): void {
    this.queue.push({ ops, done });
    this.schedule();
  }

  /** Resolves when `ops` are committed (all together, in one transaction). */
  enqueue(ops: readonly WriteOp[]): Promise<void> {
    return new Promise<void>((resolve, reject) => this.submit(ops, (err) => (err ? reject(err) : resolve())));
  }

  /** Resolves when everything enqueued so far is committed (or failed). */
  async drain(): Promise<void> {
    while (this.queue.length > 0 || this.running) {
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
      if (this.queue.length > 0) this.schedule();
    });
    this.running = run;
    return run;
  }

  private async commitBatch(): Promise<void> {
    // Take the batch with one splice: shift() per unit turns O(n²) on long queues.
    let count = 0;
    let n = 0;
    while (n < this.queue.length && (n === 0 || count + this.queue[n]!.ops.length <= this.maxBatchOps)) {
      count += this.queue[n]!.ops.length;
      n++;
    }
    if (n === 0) return;
    const batch = this.queue.splice(0, n);
    let all: readonly WriteOp[];
    if (n === 1) {
      all = batch[0]!.ops;
    } else {
      const flat: WriteOp[] = [];
      for (const u of batch) for (const op of u.ops) flat.push(op);
      all = flat;
    }
    let failed: unknown = null;
    try {
      await this.store.commit(all);
    } catch (err) {
      failed = err;
    }
    if (failed === null) {
      for (const u of batch) settle(u, null);
      return;
    }
    if (n === 1) {
      settle(batch[0]!, failed);
      return;
    }
    // One bad unit must not fail its neighbours (other sessions): retry each on its own.
    for (const u of batch) {
      try {
        await this.store.commit(u.ops);
        settle(u, null);
      } catch (unitErr) {
        settle(u, unitErr);
      }
    }
  }
}

function settle(unit: Unit, err: unknown): void {
  try {
    unit.done(err);
  } catch {
    // A callback's own failure is its owner's to report; it must not fail the batch.
  }
}
