/**
 * The event logs of this process's sessions: each fenced by the session's lease (every write
 * carries the lease's token, so a process that lost the session can never write to it again) and,
 * on scale-out, publishing its frames to the bus for the other nodes. A runtime's log, the log an
 * end writes its terminal state through, and the log of a delivery to a session not live here are
 * all opened here.
 */
import type { Logger } from "../../lib/logger.js";
import type { Metrics } from "../../lib/metrics.js";
import { EventLog, type EventLogDeps, type GroupCommitter, type RingBudget, type RingLimits } from "../../events/index.js";
import type { Bus } from "../../events/bus/index.js";
import type { Clock } from "../../lib/clock.js";
import { FenceError, type Store } from "../../store/types.js";
import type { Ownership } from "./ownership.js";

export interface SessionLogsDeps {
  store: Store;
  committer: GroupCommitter;
  epoch: string;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  ringBudget: RingBudget;
  ringLimits: RingLimits;
  ownership: Ownership;
  bus?: Bus;
}

export class SessionLogs {
  constructor(private readonly deps: SessionLogsDeps) {}

  /**
   * The session's event log. `onFenced` runs when a write of it was refused because another
   * process owns the session now (the runtime using it must go, quietly).
   */
  async open(sessionId: string, onFenced?: () => void): Promise<EventLog> {
    return this.published(sessionId, await EventLog.open(sessionId, this.logDeps(sessionId, onFenced)));
  }

  /** The log of a session just created here, its row not yet committed (EventLog.fresh). */
  openFresh(sessionId: string, onFenced?: () => void): EventLog {
    return this.published(sessionId, EventLog.fresh(sessionId, this.logDeps(sessionId, onFenced)));
  }

  private logDeps(sessionId: string, onFenced: (() => void) | undefined): EventLogDeps {
    const d = this.deps;
    return {
      store: d.store,
      committer: d.committer,
      epoch: d.epoch,
      clock: d.clock,
      ringBudget: d.ringBudget,
      ringLimits: d.ringLimits,
      fence: () => d.ownership.fenceOp(sessionId),
      onError: (err, context) => {
        if (err instanceof FenceError) {
          // The store's own words (which lease, which token): the one line an operator reads about it.
          d.logger.error({ session_id: sessionId, context, error: err.message }, "write refused: this process no longer owns the session");
          onFenced?.();
          return;
        }
        // An outage is logged once by the group commit's StoreHealth (down, up), not per write.
        d.logger.debug({ session_id: sessionId, context, error: err instanceof Error ? err.message : String(err) }, "event log: a write failed");
      },
      // Its own observer: the turn's start and first token are this log's state.
      metrics: d.metrics.sessionFrames(),
    };
  }

  private published(sessionId: string, log: EventLog): EventLog {
    // One node (in-process bus) publishes nothing: the single-node path pays nothing for scale-out.
    const bus = this.deps.bus;
    if (bus && bus.kind !== "local") log.subscribe((frame, wire) => bus.publish(sessionId, frame.seq!, wire));
    return log;
  }
}
