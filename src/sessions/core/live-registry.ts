/**
 * The live runtimes of this process, and the transitions in flight around them: opens, ends and
 * resumes ("binds"). Every module that changes a runtime's liveness goes through this one registry,
 * so an open waits for an end of the same session and a reap never takes a session being resumed.
 */
import type { SessionRuntime } from "./session-runtime.js";

export class LiveRegistry {
  private readonly runtimes = new Map<string, SessionRuntime>();
  /** Opens in progress, so two resumes of one session share one runtime. */
  readonly opening = new Map<string, Promise<SessionRuntime>>();
  /** Ends in progress (and store-only writes): an open of the same session waits for it. */
  readonly endings = new Map<string, Promise<void>>();
  /** Resumes in flight per session: while one is, the session counts as attached (no reap). */
  private readonly binds = new Map<string, number>();

  get(sessionId: string): SessionRuntime | undefined {
    return this.runtimes.get(sessionId);
  }

  has(sessionId: string): boolean {
    return this.runtimes.has(sessionId);
  }

  add(runtime: SessionRuntime): void {
    this.runtimes.set(runtime.id, runtime);
  }

  /** Removes `runtime` — unless a newer runtime of the same session already replaced it. */
  drop(runtime: SessionRuntime): void {
    if (this.runtimes.get(runtime.id) === runtime) this.runtimes.delete(runtime.id);
  }

  values(): IterableIterator<SessionRuntime> {
    return this.runtimes.values();
  }

  get size(): number {
    return this.runtimes.size;
  }

  isLive(runtime: SessionRuntime): boolean {
    return this.runtimes.get(runtime.id) === runtime;
  }

  isBinding(sessionId: string): boolean {
    return (this.binds.get(sessionId) ?? 0) > 0;
  }

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
}
