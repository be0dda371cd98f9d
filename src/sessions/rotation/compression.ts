/**
 * Compression of a live session: one code path for the automatic check after every model turn and
 * for `/compress`. It runs in the session's turn slot (no turn overlaps it), summarizes the middle
 * of the transcript with the session's provider, and hands the result to the rotation
 * (rotation-handover.ts: one transaction, the parent ends `compression`, the continuation starts).
 *
 * A failed summary changes nothing: the session goes on as it was, a durable `session.notice`
 * (`compression_failed`, with `retry_in_s`) says so, and the automatic path backs off
 * 60 s, 300 s, then 900 s before trying again (a timer retries by itself once the back-off is over).
 */
import {
  EventType,
  type SessionNoticePayload,
  type TurnCompletePayload,
  type TurnErrorInfo,
  type TurnErrorPayload,
  type TurnStartPayload,
} from "../../protocol/index.js";
import type { Clock, TimerHandle } from "../../lib/clock.js";
import type { Logger } from "../../lib/logger.js";
import type { CompressionConfig } from "../../config/index.js";
import type { Store, WriteOp } from "../../store/types.js";
import { ProviderError } from "../../agent/provider.js";
import {
  compressionThreshold,
  countContext,
  planCompression,
  summarize,
  SummaryError,
  type CompressionPlan,
} from "../../agent/compression/index.js";
import type { LiveRegistry } from "../core/live-registry.js";
import type { LiveSettings } from "../core/live-settings.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import type { QueuedTurn } from "../core/turn-queue.js";
import type { Rotation } from "./rotation-handover.js";

/** Back-off after consecutive failed summaries, in seconds (the last repeats). */
export const COMPRESSION_BACKOFF_S = [60, 300, 900] as const;

export const COMPRESS_COMMAND = "/compress";
export const REASON_AUTO = "compression";
export const REASON_MANUAL = "compression_manual";

export interface CompressorDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** `settings.compression` and the providers' context lengths are read at every decision (live reload). */
  settings: LiveSettings;
  registry: LiveRegistry;
  rotation: Rotation;
}

export type CompressResult =
  | { status: "rotated"; to: string }
  | { status: "nothing" }
  | { status: "failed"; error: TurnErrorInfo; retryInS: number };

interface Backoff {
  failures: number;
  /** Monotonic ms before which the automatic path does not try. */
  retryAt: number;
  timer?: TimerHandle;
}

export class Compressor {
  private readonly backoff = new WeakMap<SessionRuntime, Backoff>();

  constructor(private readonly deps: CompressorDeps) {}

  private get config(): CompressionConfig {
    return this.deps.settings.compression;
  }

  /** The model's context length in tokens (provider `context_length`, else the configured default). */
  private contextLength(rt: SessionRuntime): number {
    return this.deps.settings.providers.get(rt.providerName)?.contextLength ?? this.config.default_context_length;
  }

  /** The session's context in tokens: provider usage when known, else chars / 4. */
  tokens(rt: SessionRuntime): number {
    return countContext({ history: rt.history, systemPrompt: rt.systemPrompt, last: rt.usageMark });
  }

  threshold(rt: SessionRuntime): number {
    return compressionThreshold(this.config, this.contextLength(rt));
  }

  /** Automatic compression is due: enabled, over the threshold, not backing off. */
  due(rt: SessionRuntime): boolean {
    // A sub-agent's session runs one task and ends: it is never rotated under its delegation.
    if (!this.config.enabled || !this.deps.registry.isServing(rt) || rt.row.flags.delegate) return false;
    const b = this.backoff.get(rt);
    if (b && this.deps.clock.monotonic() < b.retryAt) return false;
    return this.tokens(rt) >= this.threshold(rt);
  }

  /** After every model turn, in the turn slot. */
  async afterTurn(rt: SessionRuntime): Promise<void> {
    if (!this.due(rt)) return;
    await this.compress(rt, REASON_AUTO, new AbortController().signal);
  }

  /** `/compress`: a turn of its own (turn.start … turn.complete) that compresses on demand. */
  async command(rt: SessionRuntime, turn: QueuedTurn, signal: AbortSignal, startOps: WriteOp[]): Promise<boolean> {
    const text = turn.text.trim();
    if (text !== COMPRESS_COMMAND && !text.startsWith(`${COMPRESS_COMMAND} `)) return false;
    const ids = { turnId: turn.turnId, traceId: turn.traceId };
    rt.log.emit<TurnStartPayload>(EventType.TurnStart, { turn_id: turn.turnId, trace_id: turn.traceId, input: turn.text }, { ...ids, ops: startOps });
    const clearTurn: WriteOp = { op: "session.update", id: rt.id, patch: { active_turn: null, last_activity_at: this.deps.clock.now() } };
    let completed = false;
    const complete = (status: TurnCompletePayload["status"], error?: TurnErrorInfo) => {
      if (completed) return;
      completed = true;
      if (error) rt.log.emit<TurnErrorPayload>(EventType.TurnError, { turn_id: turn.turnId, error }, ids);
      rt.log.emit<TurnCompletePayload>(EventType.TurnComplete, { turn_id: turn.turnId, status }, { ...ids, ops: [clearTurn] });
    };
    const result = await this.compress(rt, REASON_MANUAL, signal, {
      manual: true,
      beforeRotate: () => complete("complete"),
    });
    if (result.status === "failed") complete("error", result.error);
    else complete("complete");
    if (result.status !== "rotated") await rt.log.flushed().catch(() => undefined);
    return true;
  }

  /** The one code path: plan, summarize, rotate — or leave everything as it was and back off. */
  async compress(
    rt: SessionRuntime,
    reason: string,
    signal: AbortSignal,
    opts: { manual?: boolean; beforeRotate?: () => void } = {},
  ): Promise<CompressResult> {
    const cfg = this.config;
    const logger = this.deps.logger.child({ session_id: rt.id });
    let plan: CompressionPlan;
    let summary: string;
    try {
      await rt.log.flushed();
      const rows = await this.deps.store.loadMessages(rt.id);
      plan = planCompression(rows, cfg.protect_first_n, cfg.protect_last_n);
      if (plan.middle.length === 0) {
        if (opts.manual) this.notice(rt, { level: "info", code: "compression_skipped", message: "Nothing to compress: every message is protected." });
        return { status: "nothing" };
      }
      summary = await summarize(rt.provider, rt.model, plan.middle, signal);
    } catch (err) {
      return await this.failed(rt, err, logger);
    }
    try {
      opts.beforeRotate?.();
      const to = await this.deps.rotation.rotate(rt, plan, summary, reason);
      const b = this.backoff.get(rt);
      b?.timer?.cancel();
      this.backoff.delete(rt);
      logger.info({ to, reason, summarized: plan.middle.length }, "session compressed into a continuation");
      return { status: "rotated", to };
    } catch (err) {
      return await this.failed(rt, err, logger);
    }
  }

  private async failed(rt: SessionRuntime, err: unknown, logger: Logger): Promise<CompressResult> {
    const b = this.backoff.get(rt) ?? { failures: 0, retryAt: 0 };
    b.failures++;
    const delayS = COMPRESSION_BACKOFF_S[Math.min(b.failures, COMPRESSION_BACKOFF_S.length) - 1]!;
    b.retryAt = this.deps.clock.monotonic() + delayS * 1000;
    b.timer?.cancel();
    b.timer = this.deps.clock.setTimeout(() => this.retry(rt), delayS * 1000);
    this.backoff.set(rt, b);
    const error = errorInfo(err);
    logger.warn({ err, failures: b.failures, retry_in_s: delayS }, "compression failed; the session is unchanged");
    if (this.deps.registry.stateOf(rt) !== "handed-over") {
      this.notice(rt, {
        level: "warning",
        code: "compression_failed",
        message: `Context compression failed (${error.message}); the session is unchanged. Retrying in ${delayS} s.`,
        retry_in_s: delayS,
      });
      // Said, and seen: the notice is delivered before the turn slot frees.
      await rt.log.flushed().catch(() => undefined);
      await rt.log.settled();
    }
    return { status: "failed", error, retryInS: delayS };
  }

  /** The back-off is over: try again if the session still needs it (in the turn slot). */
  private retry(rt: SessionRuntime): void {
    const b = this.backoff.get(rt);
    if (b) b.timer = undefined;
    if (!this.deps.registry.isCurrent(rt) || !this.due(rt)) return;
    rt.runJob((signal) => this.compress(rt, REASON_AUTO, signal).then(() => undefined)).catch(() => undefined);
  }

  private notice(rt: SessionRuntime, payload: SessionNoticePayload): void {
    try {
      rt.log.emit<SessionNoticePayload>(EventType.SessionNotice, payload);
    } catch (err) {
      this.deps.logger.warn({ err, session_id: rt.id }, "could not emit a notice");
    }
  }
}

function errorInfo(err: unknown): TurnErrorInfo {
  const cause = err instanceof SummaryError ? err.cause : err;
  if (cause instanceof ProviderError) return { ...cause.info, message: `compression: ${cause.info.message}` };
  const message = err instanceof Error ? err.message : String(err);
  return { layer: "gateway", code: "compression_failed", retryable: true, message: `compression failed: ${message}` };
}
