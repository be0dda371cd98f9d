/**
 * Global frames (`session.reclaimed`): not part of any session's log, sent to the connections of
 * the principal that owns the session they name (another principal must not learn the session
 * exists). A failing listener is logged and skipped, so one broken transport cannot starve the others.
 */
import { EventType, encodeEventNotification, type Frame, type SessionReclaimedPayload } from "../protocol/index.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../lib/logger.js";
import type { GlobalListener } from "./manager-types.js";

export class GlobalFrames {
  private readonly listeners = new Set<GlobalListener>();

  constructor(private readonly deps: { epoch: string; clock: Clock; logger: Logger }) {}

  on(listener: GlobalListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Tells the owner's connections a live session was reclaimed (ended by the gateway, not the user). */
  reclaimed(sessionId: string, reason: string, principal: string): void {
    if (this.listeners.size === 0) return;
    const frame: Frame<SessionReclaimedPayload> = {
      type: EventType.SessionReclaimed,
      session_id: "",
      epoch: this.deps.epoch,
      ts: this.deps.clock.now(),
      payload: { session_id: sessionId, reason },
    };
    this.deliver(frame, encodeEventNotification(frame), principal);
  }

  /** Delivers a frame (ours, or one another node broadcast) to this node's listeners. */
  deliver(frame: Frame, wire: string, principal?: string): void {
    for (const listener of this.listeners) {
      try {
        listener(frame, wire, principal);
      } catch (err) {
        this.logger.warn({ err }, "global listener failed");
      }
    }
  }

  private get logger(): Logger {
    return this.deps.logger;
  }
}
