/**
 * SQLite's WAL checkpoints off the event loop (beside the backends, whose folders hold the same
 * files; only the SQLite store uses it). SQLite's automatic checkpoint runs inside the commit
 * that takes the WAL past 1000 pages: that commit copies the pages into the database file and
 * syncs it, on the gateway's only thread. Measured in the overhead benchmark (3,100 commits in 5 s):
 * commit p50 0.07 ms, p99 3.6–8 ms, the worst 20–74 ms — and a chat completion has two commits
 * before its first token, so those were its p99. Without the automatic checkpoint the commit
 * p99 was 0.45 ms.
 *
 * So the store turns the automatic checkpoint off, and a worker thread with its own connection
 * runs a PASSIVE checkpoint every `intervalMs`: it never waits for a writer, and what it cannot
 * copy yet (pages a reader still needs) is left for the next round. The last connection to close
 * checkpoints what is left, as SQLite always does.
 *
 *   const ckpt = WalCheckpointer.start(path, { intervalMs: 500 });
 *   await ckpt.checkpointNow();   // { log, checkpointed } frames of the WAL (tests)
 *   await ckpt.stop();
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

export interface CheckpointResult {
  /** Frames in the WAL when the checkpoint ran. */
  log: number;
  /** Frames of it copied into the database. */
  checkpointed: number;
}

// CommonJS, evaluated in the worker: better-sqlite3 is loaded by its resolved path.
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.module);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma("busy_timeout = 0");
const run = () => {
  try {
    const [r] = db.pragma("wal_checkpoint(PASSIVE)");
    return { log: r.log, checkpointed: r.checkpointed };
  } catch (err) {
    return { error: String(err && err.message || err) };
  }
};
const timer = setInterval(run, workerData.intervalMs);
parentPort.on("message", (m) => {
  if (m === "now") return parentPort.postMessage(run());
  if (m === "stop") {
    clearInterval(timer);
    db.close();
    parentPort.close();
  }
});
`;

export class WalCheckpointer {
  private pending: Array<(r: CheckpointResult) => void> = [];
  private readonly exited: Promise<void>;
  private stopping: Promise<void> | undefined;

  private constructor(
    private readonly worker: Worker,
    onDead: () => void,
  ) {
    worker.on("message", (r: CheckpointResult) => this.pending.shift()?.(r));
    // A worker that died (its connection could not open) answers what waits with -1 frames.
    worker.on("error", () => this.flushPending());
    this.exited = new Promise<void>((resolve) =>
      worker.once("exit", () => {
        this.flushPending();
        // Not stopped by us: someone must checkpoint, or the WAL grows without end.
        if (!this.stopping) onDead();
        resolve();
      }),
    );
    // Never what keeps the process alive.
    worker.unref();
  }

  /** `onDead`: the worker ended on its own (the caller turns SQLite's own checkpoint back on). */
  static start(path: string, opts: { intervalMs: number; onDead: () => void }): WalCheckpointer {
    const module = createRequire(import.meta.url).resolve("better-sqlite3");
    return new WalCheckpointer(new Worker(WORKER, { eval: true, workerData: { path, module, intervalMs: opts.intervalMs } }), opts.onDead);
  }

  /** Runs one checkpoint now and says how far it got. */
  checkpointNow(): Promise<CheckpointResult> {
    if (this.stopping) return Promise.resolve({ log: -1, checkpointed: -1 });
    return new Promise<CheckpointResult>((resolve) => {
      this.pending.push(resolve);
      this.worker.postMessage("now");
    });
  }

  /** Stops the worker (its connection closes; the store's own close checkpoints the rest). */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      // Referenced again while it stops: an unreferenced worker is no reason to stay alive, and a
      // process whose shutdown waits here with nothing else left would exit mid-close (what comes
      // after the store's close, such as the last traces' flush, would never run).
      this.worker.ref();
      this.worker.postMessage("stop");
      // A worker stuck in a checkpoint is not waited for long: the database stays consistent.
      const cap = setTimeout(() => void this.worker.terminate(), 2_000);
      cap.unref();
      await this.exited;
      clearTimeout(cap);
    })();
    return this.stopping;
  }

  private flushPending(): void {
    for (const p of this.pending.splice(0)) p({ log: -1, checkpointed: -1 });
  }
}
