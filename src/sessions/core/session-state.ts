/**
 * A session's ONE state in this process, and the transitions it may take. The live registry
 * (live-registry.ts) keeps each session's state and is the only place that changes it, through
 * its named methods; every other module asks. (ioredis keeps a connection's life the same way: one
 * `status`, changed in one place.)
 *
 *   (absent) ─open─▶ opening ─opened─▶ live ◀─attach── parked
 *                       │                 └──park───▶ ▲  │
 *                       └─failed─▶ (absent)           │  │
 *   live | parked ──await──▶ awaiting ──answered──▶ live | parked
 *   live | parked | awaiting ──end | discard──▶ ending ──drop──▶ (absent)
 *   live | parked | awaiting ──handOver──▶ handed-over ──drop──▶ (absent)
 *   (absent) ──borrow──▶ writing ──returned──▶ (absent)
 *
 * Whether someone is about to attach (a resume in flight, "binding") is not a state: it is a hold
 * on the id that any state can have, even (absent); a held session is never parked or reaped.
 */

export type SessionState =
  /** An open is in flight here (lease, row, log, recovery); another open of the id joins it. */
  | "opening"
  /** Its runtime is here and in use: viewed, or about to be (a resume holds it; a session just created). */
  | "live"
  /** Its runtime is here and nobody views it: its reap is armed and, while idle, its lease says "detached". */
  | "parked"
  /**
   * Its turn is parked on open requests (a tool approval, a client-tool call): RequestService
   * moves it here, and back once they are answered. It holds no provider stream, so it is never
   * stale, and it does not keep the reaper away: an unviewed awaiting session is reaped like an
   * idle one, and whichever process opens it next continues the turn from the stored transcript
   * when the request is answered.
   */
  | "awaiting"
  /** An end is in flight: its turn stops, `session.closed` is written, the lease goes. An open of the id waits for it. */
  | "ending"
  /** It gave way — to its continuation (compression) or to another process (lease lost) — and takes nothing new. */
  | "handed-over"
  /** No runtime here: this process writes to it under its lease (a delegation delivered to a session not live here). An open waits. */
  | "writing";

/** A state, or `absent`: the session has nothing in this process. */
export type StateOrAbsent = SessionState | "absent";

/** Every transition the registry may make; anything else is a bug in its caller. */
export const TRANSITIONS: Readonly<Record<StateOrAbsent, readonly StateOrAbsent[]>> = {
  absent: ["opening", "writing"],
  opening: ["live", "absent"],
  live: ["parked", "awaiting", "ending", "handed-over"],
  parked: ["live", "awaiting", "ending", "handed-over"],
  awaiting: ["live", "parked", "ending", "handed-over"],
  ending: ["absent"],
  "handed-over": ["absent"],
  writing: ["absent"],
};

/** The states whose runtime serves the session: it takes viewers, turns, jobs and deliveries. */
export function isServingState(state: StateOrAbsent): boolean {
  return state === "live" || state === "parked" || state === "awaiting";
}

export function canTransition(from: StateOrAbsent, to: StateOrAbsent): boolean {
  return TRANSITIONS[from].includes(to);
}
