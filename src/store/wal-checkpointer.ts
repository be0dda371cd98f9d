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
 * copy yet (pages a reader still needs) is left for the next round.
 *
 * A PASSIVE checkpoint alone does not bound the file, though. SQLite starts writing the WAL from
 * its beginning again only when a writer finds it *wholly* copied — and under steady streaming a
 * commit lands during every checkpoint, so that moment never comes: the file grew by ~6 MiB/s with
 * 40 sessions streaming (207 MB in 30 s), and never shrank until a graceful stop. Hence the
 * ceiling (`maxBytes`, `sqlite.wal_max_bytes`): the worker looks at the file's size every
 * `checkMs`, and once it passes a quarter of the ceiling it catches up with PASSIVE checkpoints
 * (nobody waits) and then runs one TRUNCATE checkpoint — which holds writers off only while it
 * copies the last few frames, waits (at most `busyMs`) for readers still on the old log, and cuts
 * the file to zero. A reader that holds a snapshot longer (another process's long read) makes it
 * give up rather than stall writers; it tries again after a growing pause (up to 5 s).
 *
 *   const ckpt = WalCheckpointer.start(path, { intervalMs: 1000, maxBytes: 64 << 20, onDead });
 *   await ckpt.checkpointNow();   // { log, checkpointed, walBytes } (tests)
 *   await ckpt.stop();
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

export interface CheckpointResult {
  /** Frames in the WAL when the checkpoint ran. */
  log: number;
  /** Frames of it copied into the database. */
  checkpointed: number;
  /** Size of the `-wal` file after it (bytes). */
  walBytes?: number;
}

export interface WalCheckpointerOptions {
  /** PASSIVE checkpoint cadence. */
  intervalMs: number;
  /** The ceiling the `-wal` file is kept under (bytes). @default DEFAULT_WAL_MAX_BYTES */
  maxBytes?: number;
  /** How often the file's size is looked at. @default 100 */
  checkMs?: number;
  /** Longest a TRUNCATE checkpoint waits for a writer or a reader. @default 100 */
  busyMs?: number;
  /** The worker ended on its own (the caller turns SQLite's own checkpoint back on). */
  onDead: () => void;
}

/** 64 MiB: the `-wal` file's ceiling unless `sqlite.wal_max_bytes` says otherwise. */
export const DEFAULT_WAL_MAX_BYTES = 64 * 1024 * 1024;

/** The size at which the worker truncates the log: far enough under the ceiling for any write rate it can see coming. */
export function truncateAtBytes(maxBytes: number): number {
  return Math.max(1, Math.floor(maxBytes / 4));
}

// CommonJS, evaluated in the worker: better-sqlite3 is loaded by its resolved path.
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const { statSync } = require("node:fs");
const Database = require(workerData.module);
const { path, intervalMs, checkMs, busyMs, truncateAt } = workerData;
const db = new Database(path, { fileMustExist: true });
db.pragma("busy_timeout = 0");
const walBytes = () => {
  try {
    return statSync(path + "-wal").size;
  } catch {
    return 0;
  }
};
const checkpoint = (mode) => db.pragma("wal_checkpoint(" + mode + ")")[0];
let lastPassive = Date.now();
let retryAt = 0;
let pause = 250;
/** Catch up without blocking anyone, then cut the log while writers wait only for the last frames. */
const truncate = () => {
  for (let i = 0; i < 4; i++) {
    const r = checkpoint("PASSIVE");
    if (r.checkpointed >= r.log) break;
  }
  db.pragma("busy_timeout = " + busyMs);
  let r;
  try {
    r = checkpoint("TRUNCATE");
  } finally {
    db.pragma("busy_timeout = 0");
  }
  if (r.busy) {
    retryAt = Date.now() + pause;
    pause = Math.min(pause * 2, 5000);
  } else {
    pause = 250;
  }
  return r;
};
const run = (force) => {
  try {
    const now = Date.now();
    let r;
    if (walBytes() >= truncateAt && (force || now >= retryAt)) r = truncate();
    else if (force || now - lastPassive >= intervalMs) r = checkpoint("PASSIVE");
    else return undefined;
    lastPassive = now;
    return { log: r.log, checkpointed: r.checkpointed, walBytes: walBytes() };
  } catch (err) {
    return { error: String(err && err.message || err) };
  }
};
const timer = setInterval(() => run(false), Math.min(checkMs, intervalMs));
parentPort.on("message", (m) => {
  if (m === "now") return parentPort.postMessage(run(true));
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

  static start(path: string, opts: WalCheckpointerOptions): WalCheckpointer {
    const module = createRequire(import.meta.url).resolve("better-sqlite3");
    const workerData = {
      path,
      module,
      intervalMs: opts.intervalMs,
      checkMs: opts.checkMs ?? 100,
      busyMs: opts.busyMs ?? 100,
      truncateAt: truncateAtBytes(opts.maxBytes ?? DEFAULT_WAL_MAX_BYTES),
    };
    return new WalCheckpointer(new Worker(WORKER, { eval: true, workerData }), opts.onDead);
  }

  /** Runs one checkpoint now (a TRUNCATE one if the log is past its mark) and says how far it got. */
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
