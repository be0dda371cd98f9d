/**
 * One reply of the demo provider as an async iterator written out by hand, not an async generator:
 * a generator costs a resumption and several promises per chunk (its `next`, the `await` of the
 * pause, the `yield`'s own await), and at 1,000 streams × 50 chunks/s that was a measurable part of
 * the gateway's CPU per delta. Here a paced chunk costs one promise — the pacer resolves it with
 * the iterator result itself.
 *
 * Same behaviour as the generator it replaces: nothing runs before the first `next()` (an aborted
 * signal or a `fail:` plan rejects that call), the first text chunk comes at once and each later
 * one when the pacer says so, then `usage` and `finish`; an abort while pacing rejects with the
 * signal's reason untouched; `return()` (a consumer that stops early) ends the pacing.
 */
import type { ToolCall } from "../protocol/index.js";
import type { DemoPacer, PacedStream } from "./demo-pacer.js";
import { ProviderError, type ProviderChunk, type StreamRequest } from "./provider.js";
import { attachmentsTokens } from "./attachment-tokens.js";

export type DemoPlan =
  | { kind: "text"; chunks: string[] }
  | { kind: "tool"; calls: ToolCall[] }
  | { kind: "fail"; info: ProviderError["info"] };

type Result = IteratorResult<ProviderChunk, undefined>;

const DONE: Result = { done: true, value: undefined };

/** Where the stream is: its body (tool call or text chunks), then usage, then finish, then done. */
const enum Stage {
  Body,
  Usage,
  Finish,
  Done,
}

/** Unpaced streams still let I/O run every this many chunks (see `unpaced`). */
const YIELD_EVERY = 256;

export class DemoStream implements AsyncIterableIterator<ProviderChunk, undefined> {
  private plan: Exclude<DemoPlan, { kind: "fail" }> | null = null;
  private stage = Stage.Body;
  /** The next text chunk. */
  private i = 0;
  private pace: PacedStream | undefined;

  constructor(
    private readonly req: StreamRequest,
    private readonly makePlan: () => DemoPlan,
    /** null: unpaced (delay 0). */
    private readonly pacer: DemoPacer | null,
    private readonly estimateTokens: (text: string) => number,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<Result> {
    try {
      return this.step();
    } catch (err) {
      this.finish();
      return Promise.reject(err);
    }
  }

  return(): Promise<Result> {
    this.finish();
    return Promise.resolve(DONE);
  }

  private step(): Promise<Result> {
    if (this.stage === Stage.Done) return Promise.resolve(DONE);
    const plan = this.plan ?? this.begin();
    if (this.stage === Stage.Body) {
      if (plan.kind === "tool") {
        this.stage = Stage.Usage;
        return Promise.resolve({ done: false, value: { type: "tool_calls", calls: plan.calls } });
      }
      if (this.i < plan.chunks.length) return this.text(plan.chunks, this.i++);
      // The last chunk was handed out: usage is next.
      this.pace?.end();
      this.stage = Stage.Usage;
    }
    if (this.stage === Stage.Usage) {
      this.stage = Stage.Finish;
      const output = plan.kind === "tool" ? plan.calls.map((c) => c.arguments).join("") : plan.chunks.join("");
      const prompt_tokens = this.estimateTokens(this.req.messages.map((m) => m.content ?? "").join("")) + this.req.messages.reduce((n, m) => n + attachmentsTokens(m.parts), 0);
      const completion_tokens = this.estimateTokens(output);
      const usage = { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
      return Promise.resolve({ done: false, value: { type: "usage", usage } });
    }
    this.stage = Stage.Done;
    return Promise.resolve({ done: false, value: { type: "finish", reason: plan.kind === "tool" ? "tool_calls" : "stop" } });
  }

  private begin(): Exclude<DemoPlan, { kind: "fail" }> {
    this.req.signal.throwIfAborted();
    const plan = this.makePlan();
    if (plan.kind === "fail") throw new ProviderError(plan.info);
    this.plan = plan;
    if (plan.kind === "text" && this.pacer) this.pace = this.pacer.start(this.req.signal);
    return plan;
  }

  private text(chunks: string[], i: number): Promise<Result> {
    const result: Result = { done: false, value: { type: "text", text: chunks[i]! } };
    if (i === 0) return Promise.resolve(result);
    if (this.pace) return this.pace.next(result);
    return this.unpaced(result);
  }

  /**
   * Unpaced, but like a real stream it lets I/O run now and then: without this a 100k-chunk reply
   * is produced in one event-loop turn, and no socket can flush until it ends. An abort rejects
   * with the caller's reason untouched: an interruption, not a failure.
   */
  private unpaced(result: Result): Promise<Result> {
    const signal = this.req.signal;
    if (this.i % YIELD_EVERY !== 0) {
      signal.throwIfAborted();
      return Promise.resolve(result);
    }
    return new Promise<Result>((resolve, reject) =>
      setImmediate(() => (signal.aborted ? reject(signal.reason) : resolve(result))),
    );
  }

  private finish(): void {
    this.stage = Stage.Done;
    this.pace?.end();
    this.pace = undefined;
  }
}
