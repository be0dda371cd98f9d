/**
 * Group commit: writes enqueued in the same tick go to the store as one transaction. This is what
 * lets one SQLite file keep up with many streaming sessions: the cost of a commit is paid once
 * per batch, not once per event. Commits run one at a time and in enqueue order, so a later
 * write can never land before an earlier one (seq order on disk = seq order on the wire).
 */
import type { Store, WriteOp } from "../store/types.js";

interface Unit {
  ops: readonly WriteOp[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class GroupCommitter {
  private queue: Unit[] = [];
  private scheduled = false;
  private running: Promise<void> | null = null;

  constructor(
    private readonly store: Store,
    private readonly maxBatchOps = 10_000,
  ) {}

  /** Resolves when `ops` are committed (all together, in one transaction). */
  enqueue(ops: readonly WriteOp[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ ops, resolve, reject });
      this.schedule();
    });
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
    const batch: Unit[] = [];
    let count = 0;
    while (this.queue.length > 0 && (batch.length === 0 || count + this.queue[0]!.ops.length <= this.maxBatchOps)) {
      const unit = this.queue.shift()!;
      batch.push(unit);
      count += unit.ops.length;
    }
    if (batch.length === 0) return;
    const all = batch.length === 1 ? batch[0]!.ops : batch.flatMap((u) => u.ops);
    try {
      await this.store.commit(all);
      for (const u of batch) u.resolve();
    } catch (err) {
      if (batch.length === 1) {
        batch[0]!.reject(err);
        return;
      }
      // One bad unit must not fail its neighbours (other sessions): retry each on its own.
      for (const u of batch) {
        try {
          await this.store.commit(u.ops);
          u.resolve();
        } catch (unitErr) {
          u.reject(unitErr);
        }
      }
    }
  }
}
