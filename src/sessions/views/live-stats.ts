/**
 * Counts over the live runtimes of this process: `session.events.stats` (the caller's own sessions
 * only), the per-principal turn limit of the HTTP API, and the gauges of /metrics (every session:
 * /metrics needs the operator's key).
 */
import type { ActiveTurn, StatsResult } from "../../protocol/index.js";
import type { SessionRuntime } from "../core/session-runtime.js";

/**
 * Stats over the runtimes of `principal` (every runtime when null: the operator's view, for
 * /metrics). Another principal's sessions, turns and trace ids never show, not even in the totals.
 */
export function statsOf(runtimes: Iterable<SessionRuntime>, now: number, principal: string | null): StatsResult {
  let sessions = 0;
  let ringFrames = 0;
  let ringBytes = 0;
  const active: ActiveTurn[] = [];
  for (const rt of runtimes) {
    if (principal !== null && rt.row.principal !== principal) continue;
    sessions++;
    ringFrames += rt.log.ringFrames;
    ringBytes += rt.log.ringBytes;
    const t = rt.turns.running;
    if (t) {
      active.push({
        session_id: rt.id,
        turn_id: t.turnId,
        trace_id: t.traceId,
        elapsed_s: Math.round((now - t.startedAt) / 100) / 10,
        streaming: rt.log.isStreaming,
      });
    }
  }
  return { sessions, ring_frames: ringFrames, ring_bytes: ringBytes, active_turns: active };
}

/** Running plus queued turns of `principal`'s live sessions. */
export function turnCountOf(runtimes: Iterable<SessionRuntime>, principal: string, parked: (rt: SessionRuntime) => boolean = () => false): number {
  let n = 0;
  for (const rt of runtimes) {
    // A turn parked on open requests (an approval, a client's tool call) uses nothing while it waits.
    if (rt.row.principal === principal) n += (rt.turns.running && !parked(rt) ? 1 : 0) + rt.turns.length;
  }
  return n;
}

/** Bytes of prompt text in `principal`'s waiting turns (the quota on queued prompts). */
export function queuedPromptBytesOf(runtimes: Iterable<SessionRuntime>, principal: string): number {
  let n = 0;
  for (const rt of runtimes) if (rt.row.principal === principal) n += rt.turns.waitingTextBytes;
  return n;
}

/** `principal`'s live sessions among `runtimes`. */
export function liveSessionsOf(runtimes: Iterable<SessionRuntime>, principal: string): number {
  let n = 0;
  for (const rt of runtimes) if (rt.row.principal === principal) n++;
  return n;
}

/** Live sessions with a viewer (`live`) and without (`detached`). */
export function viewerCountsOf(runtimes: Iterable<SessionRuntime>, count: number): { live: number; detached: number } {
  let live = 0;
  for (const rt of runtimes) if (rt.viewers.size > 0) live++;
  return { live, detached: count - live };
}
