/**
 * Who is watching a live session, and what happens when nobody is. A session with no viewer is
 * *parked*: its reap is armed (lifecycle.ts) and its lease says "detached", so a resume in another
 * process may take it over. A resume counts the session as bound from its first instant, so a
 * disconnect or a reap firing meanwhile can never park or reap it under the client.
 *
 * The lease's "detached" flag is the other processes' view of the parked state; it is written
 * here only, whenever a session is parked, attached again, or settles a turn while parked.
 */
import { EndReason, ErrorCode, TetherError } from "../../protocol/index.js";
import type { Logger } from "../../lib/logger.js";
import type { LiveRegistry } from "../core/live-registry.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import type { Viewer } from "../core/viewer.js";
import type { Lifecycle } from "./lifecycle.js";
import type { Ownership } from "./ownership.js";
import type { SessionEnding } from "./session-ending.js";

export interface ViewerBindingDeps {
  registry: LiveRegistry;
  lifecycle: Lifecycle;
  ownership: Ownership;
  logger: Logger;
  /** Ends a session whose last viewer left and that asked to close on disconnect. */
  ending: SessionEnding;
}

export class ViewerBinding {
  constructor(private readonly deps: ViewerBindingDeps) {}

  /** Runs `fn` with the session counted as being bound; parks it after if nobody is viewing. */
  async binding<T>(sessionId: string, fn: () => Promise<T>): Promise<T> {
    const { registry } = this.deps;
    registry.bind(sessionId);
    try {
      return await fn();
    } finally {
      const left = registry.unbind(sessionId);
      const rt = registry.get(sessionId);
      // A resume that failed (or attached nobody) must not leave an unwatched session unreaped.
      if (rt && left === 0 && rt.viewers.size === 0 && registry.isServing(rt)) this.park(rt);
    }
  }

  attach(runtime: SessionRuntime, viewer: Viewer): void {
    if (!this.deps.registry.isServing(runtime)) {
      throw new TetherError(ErrorCode.NotLive, "Session is ending; resume it again", { method: "session.resume" });
    }
    const wasDetached = runtime.viewers.size === 0;
    runtime.attach(viewer);
    this.deps.lifecycle.rebound(runtime);
    if (wasDetached) this.leaseDetached(runtime, false);
  }

  park(runtime: SessionRuntime): void {
    this.deps.lifecycle.parked(runtime);
    this.leaseDetached(runtime, !runtime.running);
  }

  /** A turn settled (the runtime's `turnSettled` hook): restart a detached session's grace, mark its lease. */
  turnSettled(runtime: SessionRuntime): void {
    // A turn its runtime's end or hand-over stopped settles after the state moved on: no grace to
    // restart (asking to park an ending runtime is a transition the table refuses).
    if (!this.deps.registry.isServing(runtime)) return;
    this.deps.lifecycle.activity(runtime);
    if (runtime.viewers.size === 0) this.leaseDetached(runtime, true);
  }

  /**
   * The viewer leaves. Only if it was the last one, and no resume is binding the session right now
   * (a rebind in between wins), is the session parked and its reap armed.
   */
  detachFrom(runtime: SessionRuntime, viewer: Viewer): void {
    const wasLast = runtime.detach(viewer.id);
    const { registry } = this.deps;
    if (!wasLast || !registry.isServing(runtime) || registry.isBinding(runtime.id)) return;
    if (runtime.row.flags.close_on_disconnect) {
      void this.deps.ending.end(runtime, EndReason.ClientDisconnect).catch((err: unknown) =>
        this.deps.logger.error({ err, session_id: runtime.id }, "close on disconnect failed"),
      );
      return;
    }
    this.park(runtime);
  }

  private leaseDetached(runtime: SessionRuntime, detached: boolean): void {
    void this.deps.ownership
      .setDetached(runtime.id, detached)
      .catch((err: unknown) => this.deps.logger.warn({ err, session_id: runtime.id }, "could not mark the lease"));
  }
}
