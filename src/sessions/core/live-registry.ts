/**
 * The sessions of this process and each one's state (session-state.ts). This is the only place a
 * session's state changes: every transition is a named method here, and each goes through one
 * step (`transition`) checked against TRANSITIONS. A transition the table does not allow changes
 * nothing, answers false, and is logged and counted (`tether_session_transitions_refused_total`):
 * it is a bug in its caller, and a silent false would hide it. Everything else asks: `stateOf`,
 * `isServing`, `get`.
 *
 * It is also the one door to a runtime: `open(id)` joins an open in flight, waits for an end or a
 * write in flight, and otherwise asks the opener — the assembler at the top of sessions/, installed
 * once by `useOpener` — to build the runtime. The wings below the top (a rotation opening its
 * continuation, cluster routing taking a session over) open through this door, and creating.ts
 * opens every new session here (`openFresh`), so none of them needs to know how a runtime is built.
 *
 * A runtime's turn slot is gated by this state too (`RuntimeHooks.serving`): once the registry no
 * longer serves a runtime it takes nothing new. The bind counter sits beside the states, not in
 * them: a hold on an id that any state has, `absent` too (see bind).
 */
import { canTransition, isServingState, type SessionState, type StateOrAbsent } from "./session-state.js";
import type { SessionRuntime } from "./session-runtime.js";
import type { SessionRow } from "../../store/types.js";
import type { Logger } from "../../lib/logger.js";

/** What a refused transition is reported to (the process's logger and metrics); optional for unit tests. */
export interface TransitionWatch {
  logger?: Pick<Logger, "warn">;
  refused?: (from: StateOrAbsent, to: StateOrAbsent) => void;
}

/** Why a transition was asked for: named in the log line of a refused one. */
export type TransitionCause =
  | "opened"
  | "park"
  | "unpark"
  | "awaiting"
  | "answered"
  | "end"
  | "hand-over"
  | "discard"
  | "drop";

/** Builds a session's runtime here (lease, row, log, recovery, hooks) and registers it with `opened`. */
export interface RuntimeOpener {
  /** `fresh`: the row of a session just created here (not yet committed): nothing to read back. */
  build(sessionId: string, fresh?: SessionRow): Promise<SessionRuntime>;
}

interface Entry {
  state: SessionState;
  /** Absent while opening and writing, and in the tail of an end (the lease being released). */
  runtime: SessionRuntime | undefined;
  /** opening: the open in flight, which another open joins. */
  opened?: Promise<SessionRuntime>;
  /** ending, writing: what an open of the session waits for. */
  settled?: Promise<void>;
  /** handed-over to a continuation: its id. */
  to?: string;
}

export class LiveRegistry {
  private readonly entries = new Map<string, Entry>();
  /** The runtimes of `entries`, by id: what `values()` and `size` count. */
  private readonly runtimes = new Map<string, SessionRuntime>();
  /** Resumes in flight per session: while one is, the session counts as attached (no park, no reap). */
  private readonly binds = new Map<string, number>();
  private opener: RuntimeOpener | undefined;

  constructor(private readonly watch: TransitionWatch = {}) {}

  /** Installs the builder of runtimes (once, when the sessions layer is assembled). */
  useOpener(opener: RuntimeOpener): void {
    if (this.opener) throw new Error("the live registry's opener is installed once");
    this.opener = opener;
  }

  // ---- Asking ----

  get(sessionId: string): SessionRuntime | undefined {
    return this.runtimes.get(sessionId);
  }

  has(sessionId: string): boolean {
    return this.runtimes.has(sessionId);
  }

  values(): IterableIterator<SessionRuntime> {
    return this.runtimes.values();
  }

  get size(): number {
    return this.runtimes.size;
  }

  /** The session's state here, `absent` when it has nothing in this process. */
  stateOfId(sessionId: string): StateOrAbsent {
    return this.entries.get(sessionId)?.state ?? "absent";
  }

  /** The state of this very runtime; `absent` once it was dropped (or replaced by a newer one). */
  stateOf(runtime: SessionRuntime): StateOrAbsent {
    const e = this.entries.get(runtime.id);
    return e && e.runtime === runtime ? e.state : "absent";
  }

  /** `runtime` is the one this process holds for its session, in whatever state. */
  isCurrent(runtime: SessionRuntime): boolean {
    return this.runtimes.get(runtime.id) === runtime;
  }

  /** `runtime` serves its session (live, parked or awaiting): it takes viewers, turns, deliveries. */
  isServing(runtime: SessionRuntime): boolean {
    return isServingState(this.stateOf(runtime));
  }

  /** The open in flight for the session, if any. */
  pendingOpen(sessionId: string): Promise<SessionRuntime> | undefined {
    const e = this.entries.get(sessionId);
    return e?.state === "opening" ? e.opened : undefined;
  }

  /** The end (or store-only write) in flight for the session, if any: what an open would wait for. */
  pendingEnd(sessionId: string): Promise<void> | undefined {
    return this.entries.get(sessionId)?.settled;
  }

  // ---- Opening ----

  /**
   * The session's runtime here: the serving one, the open in flight, or a new open — after an end
   * or write in flight for the session finished (a runtime still ending must go before a new one
   * starts).
   */
  open(sessionId: string): Promise<SessionRuntime> {
    const e = this.entries.get(sessionId);
    if (e?.runtime && isServingState(e.state)) return Promise.resolve(e.runtime);
    if (e?.state === "opening") return e.opened!;
    if (e?.settled) return e.settled.catch(() => undefined).then(() => this.open(sessionId));
    return this.beginOpen(sessionId);
  }

  /** The runtime of a session just created here from its row (see RuntimeOpener.build). */
  openFresh(row: SessionRow): Promise<SessionRuntime> {
    if (this.entries.has(row.id)) return Promise.reject(new Error(`session ${row.id} is already known here`));
    return this.beginOpen(row.id, row);
  }

  private beginOpen(sessionId: string, fresh?: SessionRow): Promise<SessionRuntime> {
    const opener = this.opener;
    if (!opener) return Promise.reject(new Error("the live registry has no opener installed"));
    const entry: Entry = { state: "opening", runtime: this.runtimes.get(sessionId) };
    // Set before the opener runs: a fresh build registers its runtime (`opened`) synchronously.
    this.entries.set(sessionId, entry);
    const opened = opener.build(sessionId, fresh).catch((err: unknown) => {
      // A failed open leaves nothing behind (unless something newer took the id meanwhile).
      if (this.entries.get(sessionId) === entry) this.entries.delete(sessionId);
      throw err;
    });
    entry.opened = opened;
    return opened;
  }

  /**
   * opening → live: the opener built the runtime. Refused (false, logged, counted, the runtime not
   * registered) unless an open of the id is in flight here.
   */
  opened(runtime: SessionRuntime): boolean {
    const e = this.entries.get(runtime.id);
    if (!this.transition(runtime.id, e, "live", "opened")) return false;
    this.entries.set(runtime.id, { state: "live", runtime });
    this.runtimes.set(runtime.id, runtime);
    return true;
  }

  // ---- Viewing ----

  /** live → parked: nobody views it any more. */
  park(runtime: SessionRuntime): boolean {
    return this.move(runtime, "live", "parked", "park");
  }

  /** parked → live: a viewer attached. */
  unpark(runtime: SessionRuntime): boolean {
    return this.move(runtime, "parked", "live", "unpark");
  }

  /** A resume of the session starts: from now until `unbind`, it counts as attached. */
  bind(sessionId: string): void {
    this.binds.set(sessionId, (this.binds.get(sessionId) ?? 0) + 1);
  }

  /** Ends one bind of the session; returns how many are still in flight. */
  unbind(sessionId: string): number {
    const left = (this.binds.get(sessionId) ?? 1) - 1;
    if (left > 0) this.binds.set(sessionId, left);
    else this.binds.delete(sessionId);
    return left;
  }

  isBinding(sessionId: string): boolean {
    return (this.binds.get(sessionId) ?? 0) > 0;
  }

  // ---- Waiting on open requests ----

  /** live | parked → awaiting: its turn parked on open requests (it holds no provider stream). */
  awaiting(runtime: SessionRuntime): boolean {
    return this.moveFrom(runtime, ["live", "parked"], "awaiting", "awaiting");
  }

  /** awaiting → live (someone views it) | parked: the requests were answered, the turn goes on. */
  answered(runtime: SessionRuntime): boolean {
    return this.move(runtime, "awaiting", runtime.viewers.size > 0 ? "live" : "parked", "answered");
  }

  // ---- Ending ----

  /**
   * serving → ending. With `run` (the end itself, started once the state says so), the returned
   * promise is what a later open of the session waits for — until it settles, also after the
   * runtime was dropped (its lease may still be being released). Without `run` (a force-reap),
   * the state lasts until `drop`.
   */
  beginEnd(runtime: SessionRuntime, run?: () => Promise<void>): Promise<void> | undefined {
    const e = this.entries.get(runtime.id);
    const current = e?.runtime === runtime && this.transition(runtime.id, e, "ending", "end");
    if (!run) return undefined;
    const ending = run().finally(() => this.settle(runtime.id, ending));
    if (current) e!.settled = ending;
    return ending;
  }

  /** serving → handed-over: to its continuation (`to`), or to another process (no `to`). */
  handOver(runtime: SessionRuntime, to?: string): boolean {
    const e = this.entries.get(runtime.id);
    if (!e || e.runtime !== runtime || !this.transition(runtime.id, e, "handed-over", "hand-over")) return false;
    if (to !== undefined) e.to = to;
    return true;
  }

  /**
   * serving → ending, for a runtime that goes without an end of its own (a new session whose row
   * never reached the store: nothing to write, nothing handed to anyone); `drop` then removes it.
   */
  discard(runtime: SessionRuntime): boolean {
    const e = this.entries.get(runtime.id);
    return !!e && e.runtime === runtime && this.transition(runtime.id, e, "ending", "discard");
  }

  /**
   * ending | handed-over → (absent): removes `runtime` — unless a newer runtime (or open) of the
   * session already replaced it. A serving runtime is not dropped (refused: end or hand it over first).
   */
  drop(runtime: SessionRuntime): boolean {
    const e = this.entries.get(runtime.id);
    const mine = e?.runtime === runtime;
    // Not a state change of this entry: an open in flight keeps its state; only the old runtime goes.
    if (mine && e!.state === "opening") e!.runtime = undefined;
    else if (mine && !this.transition(runtime.id, e, "absent", "drop")) return false;
    else if (mine && e!.state === "ending" && e!.settled) e!.runtime = undefined; // the end's tail still runs
    else if (mine) this.entries.delete(runtime.id);
    if (this.runtimes.get(runtime.id) === runtime) this.runtimes.delete(runtime.id);
    return true;
  }

  // ---- Writing without a runtime ----

  /**
   * absent → writing: `write` runs under the session's lease without a runtime here; an open of
   * the session waits for it. False (and `write` is not run) when the session is not absent.
   */
  borrow(sessionId: string, write: () => Promise<void>): Promise<void> | false {
    if (this.entries.has(sessionId)) return false;
    const entry: Entry = { state: "writing", runtime: undefined };
    this.entries.set(sessionId, entry);
    const writing = write();
    const settled = writing.catch(() => undefined).finally(() => this.settle(sessionId, settled));
    entry.settled = settled;
    return writing;
  }

  private settle(sessionId: string, promise: Promise<void>): void {
    const e = this.entries.get(sessionId);
    if (e?.settled !== promise) return;
    e.settled = undefined;
    if (!e.runtime && e.state !== "opening") this.entries.delete(sessionId);
  }

  /**
   * `from` → `to` for this very runtime. Quietly false when it is not the current runtime, is in
   * `to` already, or is in a state the table lets go to `to` by another step (awaiting is not parked
   * by its last viewer leaving); any other state is refused (logged, counted).
   */
  private move(runtime: SessionRuntime, from: SessionState, to: SessionState, cause: TransitionCause): boolean {
    return this.moveFrom(runtime, [from], to, cause);
  }

  private moveFrom(runtime: SessionRuntime, from: readonly SessionState[], to: SessionState, cause: TransitionCause): boolean {
    const e = this.entries.get(runtime.id);
    if (!e || e.runtime !== runtime || e.state === to) return false;
    if (!from.includes(e.state) && canTransition(e.state, to)) return false;
    return this.transition(runtime.id, e, to, cause);
  }

  /**
   * The one step that changes a session's state: checked against TRANSITIONS. `to` absent changes
   * nothing here (the caller removes the entry); a refused transition is logged and counted.
   */
  private transition(sessionId: string, e: Entry | undefined, to: StateOrAbsent, cause: TransitionCause): boolean {
    const from: StateOrAbsent = e?.state ?? "absent";
    if (!canTransition(from, to)) {
      this.watch.logger?.warn({ session_id: sessionId, from, to, cause }, "session state transition refused");
      this.watch.refused?.(from, to);
      return false;
    }
    if (e && to !== "absent") e.state = to;
    return true;
  }
}
