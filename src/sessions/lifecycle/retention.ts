/**
 * The retention job (`retention.ended_after_days`, off by default): deletes sessions ended that
 * long ago, with their events, messages and records, and A2A tasks finished that long ago, in the
 * background.
 *
 * It never stalls the hot path: each step is one transaction deleting at most `batch_rows` rows,
 * fewer when steps take longer than ~2 ms here (SQLite runs them on the event loop, so the bound is
 * on the loop too), and the job pauses `batch_pause_ms` between two steps, so streaming sessions'
 * commits interleave with it. The p99
 * delta latency while it runs is measured by `npm run bench -- --only=retention`.
 *
 * A compression lineage goes as one: a session compression ended is kept while its continuation
 * (the live tip) is not itself past the cutoff, so a long conversation never loses its beginning.
 * A session being deleted is marked `end_reason: "retention"` first: no resume reopens it halfway.
 */
import type { RetentionConfig } from "../../config/index.js";
import type { Clock, TimerHandle } from "../../lib/clock.js";
import type { Logger } from "../../lib/logger.js";
import { RETENTION_END_REASON, type EndedSession } from "../../store/retention-types.js";
import type { Store } from "../../store/types.js";

const DAY_MS = 86_400_000;
/** The first sweep after start waits this long (or the interval, if shorter): a start has better things to do. */
const FIRST_RUN_DELAY_MS = 60_000;
/** Candidates read per page. */
const PAGE = 100;
/** A lineage longer than this is a bug (a cycle): the session is kept. */
const MAX_HOPS = 1000;
/** How long one delete step should hold the store (and, on SQLite, the event loop). */
const STEP_TARGET_MS = 2;
const INITIAL_STEP_ROWS = 200;
const MIN_STEP_ROWS = 20;
/** Pages released per step at first (SQLite's are 4 KiB), then adapted like the delete steps. */
const INITIAL_RELEASE_PAGES = 256;
const MIN_RELEASE_PAGES = 16;
const MAX_RELEASE_PAGES = 8192;

export interface RetentionDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Read at every run, so a reload applies to the next one. */
  config: () => RetentionConfig;
}

/** How old an unreferenced blob must be to be freed (see purgeBlobs). */
const BLOB_GRACE_MS = 60 * 60 * 1000;

export interface SweepResult {
  deleted: number;
  /** Finished A2A tasks deleted (last changed before the cutoff). */
  tasks: number;
  /** Attachments freed: no message references them any more. */
  blobs: number;
  /** Kept: a lineage still live, or reopened meanwhile. */
  kept: number;
  steps: number;
  /** Bytes of the deleted rows' space given back to the file system (SQLite; 0 on PostgreSQL). */
  releasedBytes: number;
}

export class RetentionJob {
  private timer: TimerHandle | null = null;
  private running: Promise<SweepResult> | null = null;
  private stopped = false;

  constructor(private readonly deps: RetentionDeps) {}

  /** Schedules the first sweep (then one every `interval_s`); nothing happens while the option is unset. */
  start(): void {
    if (!this.deps.store.retention) return;
    this.schedule(Math.min(FIRST_RUN_DELAY_MS, this.deps.config().interval_s * 1000));
  }

  /** Cancels the next sweep and waits for a running one to stop at its next step. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = null;
    await this.running?.catch(() => undefined);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = this.deps.clock.setTimeout(() => {
      this.timer = null;
      void this.sweep()
        .catch((err: unknown) => this.deps.logger.warn({ err }, "retention sweep failed; next one at the interval"))
        .finally(() => this.schedule(this.deps.config().interval_s * 1000));
    }, ms);
  }

  /** One full sweep now (the timer's, and what tests and the benchmark call). */
  sweep(): Promise<SweepResult> {
    this.running ??= this.sweepOnce().finally(() => (this.running = null));
    return this.running;
  }

  private async sweepOnce(): Promise<SweepResult> {
    const result: SweepResult = { deleted: 0, kept: 0, steps: 0, tasks: 0, blobs: 0, releasedBytes: 0 };
    const retention = this.deps.store.retention;
    const cfg = this.deps.config();
    if (!retention || cfg.ended_after_days === undefined) return result;
    const cutoff = this.deps.clock.now() - cfg.ended_after_days * DAY_MS;
    let cursor: { ended_at: number; id: string } | undefined;
    while (!this.stopped) {
      const page = await retention.listEndedBefore(cutoff, PAGE, cursor);
      if (page.length === 0) break;
      for (const s of page) {
        if (this.stopped) break;
        cursor = { ended_at: s.ended_at, id: s.id };
        if (!(await this.lineageExpired(s, cutoff))) {
          result.kept++;
          continue;
        }
        const outcome = await this.purge(s.id, cutoff, cfg, result);
        if (outcome === "deleted") result.deleted++;
        else result.kept++;
      }
    }
    result.tasks = await this.purgeTasks(cutoff, cfg);
    result.blobs = await this.purgeBlobs(cfg);
    // The rows are gone; now their space, or the file never shrinks.
    if (result.deleted > 0 || result.tasks > 0 || result.blobs > 0) await this.releaseSpace(cfg, result);
    if (result.deleted > 0 || result.tasks > 0) {
      this.deps.logger.info(
        { deleted: result.deleted, kept: result.kept, steps: result.steps, tasks: result.tasks, released_bytes: result.releasedBytes, cutoff },
        "retention deleted ended sessions and finished A2A tasks",
      );
    }
    return result;
  }

  /**
   * Attachments no message references any more (their sessions were deleted), `batch_rows` a step.
   * Only blobs older than BLOB_GRACE_MS: a prompt stores its blobs a moment before the message
   * that references them, and that moment must not be a window for losing one.
   */
  private async purgeBlobs(cfg: RetentionConfig): Promise<number> {
    const blobs = this.deps.store.blobs;
    if (!blobs) return 0;
    const before = this.deps.clock.now() - BLOB_GRACE_MS;
    let total = 0;
    while (!this.stopped) {
      const n = await blobs.purgeUnreferenced(before, cfg.batch_rows);
      total += n;
      if (n < cfg.batch_rows) break;
      await this.pause(cfg);
    }
    return total;
  }

  /** Finished A2A tasks last changed before the cutoff, `batch_rows` a step with the same pauses. */
  private async purgeTasks(cutoff: number, cfg: RetentionConfig): Promise<number> {
    let total = 0;
    while (!this.stopped) {
      const n = await this.deps.store.retention!.purgeA2ATasks(cutoff, cfg.batch_rows);
      total += n;
      if (n < cfg.batch_rows) break;
      await this.pause(cfg);
    }
    return total;
  }

  /**
   * Gives the deleted rows' pages back to the file system (SQLite's incremental vacuum), in steps
   * held to STEP_TARGET_MS like the deletes, with the same pause between them.
   */
  private async releaseSpace(cfg: RetentionConfig, result: SweepResult): Promise<void> {
    const retention = this.deps.store.retention;
    if (!retention?.releaseSpace) return;
    let pages = INITIAL_RELEASE_PAGES;
    while (!this.stopped) {
      const started = performance.now();
      const bytes = await retention.releaseSpace(pages);
      const ms = performance.now() - started;
      if (bytes === 0) return;
      result.releasedBytes += bytes;
      result.steps++;
      if (ms > STEP_TARGET_MS) pages = Math.max(MIN_RELEASE_PAGES, Math.floor(pages / 2));
      else if (ms < STEP_TARGET_MS / 2) pages = Math.min(MAX_RELEASE_PAGES, pages * 2);
      await this.pause(cfg);
    }
  }

  /** A session compression ended goes only with its live tip: the tip must be past the cutoff too. */
  private async lineageExpired(s: EndedSession, cutoff: number): Promise<boolean> {
    if (s.end_reason === RETENTION_END_REASON || !s.continued_in) return true;
    let next: string | null = s.continued_in;
    for (let hops = 0; next && hops < MAX_HOPS; hops++) {
      const row = await this.deps.store.getSession(next);
      if (!row) return true; // the continuation is already gone
      if (row.ended_at === null || row.ended_at > cutoff) return false;
      next = row.flags.continued_in ?? null;
    }
    return next === null;
  }

  /**
   * Rows per step, adapted to how long steps take here: halved when a step took longer than
   * STEP_TARGET_MS, grown again when well under it, never above `batch_rows`. SQLite deletes on the
   * event loop, so this is what keeps a step from showing up in the deltas' latency on any disk.
   */
  private rows = 0;

  private async purge(id: string, cutoff: number, cfg: RetentionConfig, result: SweepResult): Promise<"deleted" | "skipped"> {
    for (;;) {
      if (this.rows === 0 || this.rows > cfg.batch_rows) this.rows = Math.min(cfg.batch_rows, INITIAL_STEP_ROWS);
      const started = performance.now();
      const step = await this.deps.store.retention!.purgeSession(id, cutoff, this.rows);
      const ms = performance.now() - started;
      if (ms > STEP_TARGET_MS) this.rows = Math.max(MIN_STEP_ROWS, Math.floor(this.rows / 2));
      else if (ms < STEP_TARGET_MS / 2) this.rows = Math.min(cfg.batch_rows, Math.ceil(this.rows * 1.5));
      result.steps++;
      if (step !== "more") {
        await this.pause(cfg);
        return step;
      }
      if (this.stopped) return "skipped"; // marked `retention`: the next sweep finishes it
      await this.pause(cfg);
    }
  }

  private async pause(cfg: RetentionConfig): Promise<void> {
    if (cfg.batch_pause_ms > 0) await this.deps.clock.sleep(cfg.batch_pause_ms);
    else await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
