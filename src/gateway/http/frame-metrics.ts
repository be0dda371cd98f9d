/**
 * Turn and tool metrics read off one session's delivered frames: `turn.start` starts the clock,
 * the first `message.delta` after it is the time to first token, `turn.complete` the outcome and
 * duration, `turn.error` and a failed `tool.complete` the errors by layer and code. One observer
 * per event log, so "has this turn streamed yet?" is a field of its own — a delta costs a field
 * increment and a boolean test. A turn that parked and continues in another process has no start
 * there: it is counted, without a duration.
 */
import {
  EventType,
  type ToolCompletePayload,
  type TurnCompletePayload,
  type TurnErrorPayload,
} from "../../protocol/index.js";
import type { FrameMetrics, ObservedFrame } from "../../lib/metrics.js";
import { bump, type CappedLabel, type Tallies } from "./metric-tallies.js";

/** Where the observer's findings go: the tallies, and the histograms (prom-client loaded on first use). */
export interface TurnSink {
  tallies: Tallies;
  toolNames: CappedLabel;
  errorKinds: CappedLabel;
  observeTtft(profile: string, seconds: number): void;
  observeTurn(profile: string, seconds: number): void;
}

export class SessionFrameMetrics implements FrameMetrics {
  /** `ts` of the running turn's `turn.start`; -1 when none is known here. */
  private turnStartedAt = -1;
  private awaitingFirstToken = false;

  constructor(
    private readonly sink: TurnSink,
    private readonly profile: string,
  ) {}

  frameDelivered(frame: ObservedFrame): void {
    const type = frame.type;
    if (type === EventType.MessageDelta) {
      this.sink.tallies.deltas++;
      if (this.awaitingFirstToken) {
        this.awaitingFirstToken = false;
        this.sink.observeTtft(this.profile, (frame.ts - this.turnStartedAt) / 1000);
      }
      return;
    }
    bump(this.sink.tallies.frames, type);
    if (type === EventType.TurnStart) {
      this.turnStartedAt = frame.ts;
      this.awaitingFirstToken = true;
    } else if (type === EventType.TurnComplete) {
      this.turnEnded(frame);
    } else if (type === EventType.TurnError) {
      const { error } = frame.payload as TurnErrorPayload;
      this.error(error.layer, error.code);
    } else if (type === EventType.ToolComplete) {
      this.toolEnded(frame.payload as ToolCompletePayload);
    }
  }

  private turnEnded(frame: ObservedFrame): void {
    const { status } = frame.payload as TurnCompletePayload;
    bump(this.sink.tallies.turns, `${this.profile}\0${status}`);
    if (this.turnStartedAt >= 0) this.sink.observeTurn(this.profile, (frame.ts - this.turnStartedAt) / 1000);
    this.turnStartedAt = -1;
    this.awaitingFirstToken = false;
  }

  private toolEnded(p: ToolCompletePayload): void {
    const failed = p.error !== undefined || p.error_info !== undefined;
    bump(this.sink.tallies.tools, `${this.sink.toolNames.of(p.name)}\0${failed ? "error" : "ok"}`);
    if (failed) this.error(p.error_info?.layer ?? "tool", p.error_info?.code ?? "tool_error");
  }

  private error(layer: string, code: string): void {
    bump(this.sink.tallies.errors, this.sink.errorKinds.of(`${layer}\0${code}`));
  }
}
