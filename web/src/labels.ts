/**
 * Plain words for what the gateway reports in its own terms (`detached`, `orphan_reap`, …): the
 * list, the ended bar and interrupted replies say what happened and what opening the session does.
 */
import type { SessionSummary, StopReason } from "../../src/protocol/index.js";
import { isRecoverableEnd } from "../../src/protocol/end-reasons.js";

/** How a session's row in the list describes it. */
export function sessionStateLabel(s: Pick<SessionSummary, "state" | "end_reason">): string {
  switch (s.state) {
    case "live":
      return "Open";
    case "detached":
      return "In the background";
    case "idle":
      // Ended by the gateway for a recoverable reason: opening it picks up where it was.
      return "Paused · resumes when opened";
    default:
      return endedLabel(s.end_reason);
  }
}

/** A short label for an ended session. */
export function endedLabel(reason: string | null | undefined): string {
  if (isRecoverableEnd(reason)) return "Paused · resumes when opened";
  switch (reason) {
    case "compression":
      return "Continued in a new session";
    case "delegation_complete":
      return "Sub-agent finished";
    case "client_disconnect":
      return "Closed when its tab left";
    case "retention":
      return "Being deleted (retention)";
    default:
      return "Closed";
  }
}

/** The ended bar's sentence (said once: no notice in the transcript repeats it). */
export function endedSentence(reason: string | null | undefined): string {
  if (isRecoverableEnd(reason)) return "The gateway paused this session. Resume it to continue where it stopped.";
  switch (reason) {
    case "compression":
      return "This conversation was compressed and continues in a new session.";
    case "delegation_complete":
      return "This sub-agent finished its task.";
    case "client_disconnect":
      return "This session closed when the tab that opened it left.";
    case "retention":
      return "This session is being deleted by the retention policy.";
    default:
      return "You closed this session.";
  }
}

/** Why a reply stopped before its end: the gateway's `stop_reason`, stored with the reply (so every browser says the same). */
export function interruptedLabel(reason: StopReason | undefined): string {
  switch (reason) {
    case "user":
      return "You stopped this";
    case "restart":
    case "shutdown":
      return "Cut off by a gateway restart";
    case "closed":
      return "Stopped when the session was closed";
    case "superseded":
      return "Stopped for your next message";
    default:
      return "Stopped before it finished";
  }
}

/**
 * A count as the reader's locale writes it (12,345). One formatter for the page: `toLocaleString`
 * builds a new one per call, which was a visible part of each streamed frame (#33).
 */
const COUNT = new Intl.NumberFormat();
export function formatCount(n: number): string {
  return COUNT.format(n);
}
