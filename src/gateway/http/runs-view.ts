/**
 * A run as of now, and its events as SSE, both derived from the session's event log
 * (run-events.ts). A run that is over stores its final object, so reads after that are one row;
 * until then its status is rebuilt from the log (the store's durable frames, plus the ring while
 * the session is live here), which is what makes it right after a restart and on any node.
 */
import { EventType } from "../../protocol/index.js";
import type { Caller, Profile, RunRecord } from "../../sessions/index.js";
import type { AppContext, HttpApi } from "./context.js";
import { boundToStream, FrameTap } from "./frame-tap.js";
import { RunBuilder, TERMINAL_RUN_STATUSES, type RunEvent, type RunObject } from "./run-events.js";
import { sseResponse, type SseWriter } from "./sse.js";

/** Who asks, in which profile (whose store holds the run and its session). */
export interface RunScope {
  caller: Caller;
  profile: Profile;
}

export class RunViews {
  constructor(private readonly api: HttpApi) {}

  /**
   * The run now: its stored final object, else rebuilt from the log. A run whose turn is not over
   * and whose session is live nowhere is settled here: resuming the session completes a turn a
   * dead process left in flight (`interrupted`); a turn that is not running or queued after that
   * never will be, and the run is over.
   */
  async current(scope: RunScope, record: RunRecord): Promise<RunObject> {
    if (record.result) return JSON.parse(record.result) as RunObject;
    let { builder, live } = await this.rebuild(scope, record);
    if (!builder.done && !live) {
      const snap = await scope.profile.sessions.resume(scope.caller, record.session_id).catch(() => null);
      ({ builder } = await this.rebuild(scope, record));
      if (!builder.done && snap && !snap.running) builder.abandon();
    }
    return this.settle(scope, record, builder);
  }

  /** A run whose queued turn was dropped (stopped before it started): over, from the log as it stands. */
  async settleAbandoned(scope: RunScope, record: RunRecord): Promise<RunObject> {
    const { builder } = await this.rebuild(scope, record);
    if (!builder.done) builder.abandon();
    return this.settle(scope, record, builder);
  }

  /** The builder's run; stored as the record's result once it is over. */
  private async settle({ profile }: RunScope, record: RunRecord, builder: RunBuilder): Promise<RunObject> {
    const run = builder.snapshot();
    if (builder.done && !record.result) {
      const result = JSON.stringify(run);
      await profile.records.runs.patch(record.id, { status: run.status, result });
      record.result = result;
      record.status = run.status;
    }
    return run;
  }

  private async rebuild(scope: RunScope, record: RunRecord): Promise<{ builder: RunBuilder; live: boolean }> {
    const builder = new RunBuilder(record);
    const live = await this.readLog(scope, record, builder, async () => undefined);
    return { builder, live };
  }

  /**
   * Feeds the builder the run's session log after the record's seq — and, when the run's queued
   * turn was handed to a continuation, that session's log, once the record is moved there — and
   * hands each event to `send`. Answers whether the last session read is live here.
   */
  private async readLog(scope: RunScope, record: RunRecord, builder: RunBuilder, send: (e: RunEvent | null) => Promise<void>): Promise<boolean> {
    const { caller, profile } = scope;
    for (let hops = 0; ; hops++) {
      const sessionId = builder.sessionId;
      const replay = await profile.sessions.replay(caller, sessionId, sessionId === record.session_id ? record.after_seq : 0);
      for (const f of replay.events) await send(builder.push(f));
      if (builder.sessionId === sessionId || hops >= 8) return replay.live;
      await this.moved(scope, record, builder.sessionId);
    }
  }

  /** The record follows its turn to the continuation: later reads start there. */
  private async moved({ profile }: RunScope, record: RunRecord, sessionId: string): Promise<void> {
    record.session_id = sessionId;
    record.after_seq = 0;
    await profile.records.runs.patch(record.id, { session_id: sessionId, after_seq: 0 });
  }

  /**
   * The run's events with an id above `after`: those already in the log, then live ones from a
   * tap attached before the log is read (frames in both are deduplicated by seq), until the
   * terminal event. Keep-alive comments while nothing happens.
   */
  stream(c: AppContext, scope: RunScope, record: RunRecord, after: number | undefined): Response {
    const { api } = this;
    const { caller, profile } = scope;
    return sseResponse(c, { clock: api.clock, keepAliveMs: api.config.sse_keepalive_ms, metrics: api.metrics }, async (sse) => {
      const tap = new FrameTap();
      let attached: string | null = null;
      try {
        if (!record.result) {
          attached = (await profile.sessions.resume(caller, record.session_id, tap)).session_id;
          boundToStream(tap, sse, api.flow.hardBytes, () =>
            api.logger.warn({ session_id: record.session_id, run_id: record.id }, "slow run events reader over the hard limit: ending the stream"),
          );
        }
        await this.follow(sse, scope, record, tap, attached !== null, after ?? -1);
      } finally {
        tap.close();
        // The tap moved with the session's viewers if the run followed its turn to a continuation.
        if (attached !== null) {
          for (const id of new Set([attached, record.session_id])) await profile.sessions.detach(caller, id, tap).catch(() => undefined);
        }
      }
    });
  }

  private async follow(sse: SseWriter, scope: RunScope, record: RunRecord, tap: FrameTap, attached: boolean, after: number): Promise<void> {
    const builder = new RunBuilder(record);
    // Ids are the frames' seqs in the session the run's turn is in (record.session_id).
    const send = async (e: RunEvent | null) => {
      if (e && e.id > after) await sse.send(JSON.stringify(e.data), { id: String(e.id), event: e.event });
    };
    await this.readLog(scope, record, builder, send);
    while (!builder.done && attached) {
      const f = await tap.next(sse.signal);
      if (!f || (f.type === EventType.SessionClosed && f.session_id === builder.sessionId)) break;
      const from = builder.sessionId;
      // A stop asked after this stream began decides how an interrupted turn reads: look again.
      if (f.type === EventType.TurnComplete && f.turn_id === record.turn_id && !record.stop_requested) {
        record.stop_requested = (await scope.profile.records.runs.get(scope.caller, record.id))?.stop_requested ?? false;
      }
      await send(builder.push(f));
      // Moved to a continuation: what it wrote before the tap arrived comes from its log.
      if (builder.sessionId !== from) {
        await this.moved(scope, record, builder.sessionId);
        await this.readLog(scope, record, builder, send);
      }
    }
    if (builder.done) {
      await this.settle(scope, record, builder);
      return;
    }
    // Moved to another process: the reconnect with Last-Event-ID reads the rest from the log there.
    if (sse.signal.aborted || tap.overflowed || tap.moved) return;
    // The turn can no longer end here (the session closed or moved under it): end with its outcome.
    const fresh = (await scope.profile.records.runs.get(scope.caller, record.id)) ?? record;
    const run = await this.current(scope, fresh);
    if (TERMINAL_RUN_STATUSES.has(run.status)) {
      const event = run.status === "completed" ? "run.completed" : run.status === "cancelled" ? "run.cancelled" : "run.failed";
      const latest = (await scope.profile.sessions.replay(scope.caller, run.session_id, 0).catch(() => null))?.latest_seq ?? 0;
      await sse.send(JSON.stringify({ run_id: run.run_id, status: run.status, output: run.output ?? "", usage: run.usage ?? null, error: run.error ?? null }), {
        id: String(Math.max(after + 1, latest + 1)),
        event,
      });
    }
  }
}
