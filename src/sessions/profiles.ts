/**
 * Profiles: each has its own store and its own SessionManager (work, personal, a bot). The
 * default profile's manager and store are opened at start and owned by the process; others open
 * on first use. A profile whose store cannot be opened fails that call with 5070 — it never falls
 * back to another profile's store, so one profile's turns can never land in another's database.
 *
 * To transports the registry looks like one manager: one epoch, global frames from every profile,
 * and a disconnect detaches the viewer everywhere.
 */
import { ErrorCode, TetherError, type StatsResult } from "../protocol/index.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../lib/logger.js";
import type { Caller, GlobalListener, SessionManager } from "./session-manager.js";
import type { Viewer } from "./viewer.js";

export const DEFAULT_PROFILE = "default";

export interface ProfileRegistryDeps {
  defaultManager: SessionManager;
  /** Names of the configured profiles besides `default` (read at each call: config reloads). */
  profileNames: () => string[];
  /** Opens a profile's store and starts its manager; throws when the store cannot be opened. */
  open: (name: string) => Promise<SessionManager>;
  logger: Logger;
  clock: Clock;
  /** A call waits at most this long for a profile's store to open, then answers 5070. @default 10_000 */
  openTimeoutMs?: number;
}

export const PROFILE_OPEN_TIMEOUT_MS = 10_000;

export class ProfileRegistry {
  private readonly managers = new Map<string, SessionManager>();
  private readonly opening = new Map<string, Promise<SessionManager>>();
  private readonly globalListeners = new Set<GlobalListener>();

  constructor(private readonly deps: ProfileRegistryDeps) {
    this.adopt(DEFAULT_PROFILE, deps.defaultManager);
  }

  get epoch(): string {
    return this.deps.defaultManager.epoch;
  }

  get defaultManager(): SessionManager {
    return this.deps.defaultManager;
  }

  /** The manager of `profile` (default when absent), opening its store on first use. */
  async manager(profile: string | undefined): Promise<SessionManager> {
    const name = profile ?? DEFAULT_PROFILE;
    const open = this.managers.get(name);
    if (open) return open;
    if (!this.deps.profileNames().includes(name)) {
      throw new TetherError(ErrorCode.InvalidParams, `Invalid params: unknown profile "${name}"`, {
        issues: [{ path: "profile", message: `not one of: ${[DEFAULT_PROFILE, ...this.deps.profileNames()].join(", ")}` }],
      });
    }
    let opening = this.opening.get(name);
    if (!opening) {
      opening = this.deps
        .open(name)
        .then((m) => this.adopt(name, m))
        .catch((err: unknown) => {
          this.deps.logger.error({ err, profile: name }, "profile store unavailable");
          throw unavailable(name, err);
        })
        .finally(() => this.opening.delete(name));
      this.opening.set(name, opening);
    }
    return this.withinTimeout(name, opening);
  }

  /**
   * A store that hangs while opening (a dead network mount, an unreachable database) fails the
   * call with 5070 after the timeout; the open goes on, and a later call waits for that same open
   * again (never a second one beside it), so a store that comes back serves from then on.
   */
  private withinTimeout(name: string, opening: Promise<SessionManager>): Promise<SessionManager> {
    const ms = this.deps.openTimeoutMs ?? PROFILE_OPEN_TIMEOUT_MS;
    const timeout = new AbortController();
    const timedOut = this.deps.clock.sleep(ms, timeout.signal).then(
      () => {
        this.deps.logger.error({ profile: name, timeout_ms: ms }, "profile store did not open in time");
        throw unavailable(name, new Error(`the store did not open within ${ms} ms`));
      },
      () => new Promise<never>(() => undefined), // the open settled first
    );
    return Promise.race([opening, timedOut]).finally(() => timeout.abort());
  }

  all(): SessionManager[] {
    return [...this.managers.values()];
  }

  onGlobal(listener: GlobalListener): () => void {
    this.globalListeners.add(listener);
    return () => this.globalListeners.delete(listener);
  }

  detachViewer(viewer: Viewer): void {
    for (const m of this.managers.values()) m.detachViewer(viewer);
  }

  /** `session.events.stats` over every open profile, scoped to the caller's principal. */
  stats(caller: Caller): StatsResult {
    const out: StatsResult = { sessions: 0, ring_frames: 0, ring_bytes: 0, active_turns: [] };
    for (const m of this.managers.values()) {
      const s = m.stats(caller);
      out.sessions += s.sessions;
      out.ring_frames += s.ring_frames;
      out.ring_bytes += s.ring_bytes;
      out.active_turns.push(...s.active_turns);
    }
    return out;
  }

  private adopt(name: string, manager: SessionManager): SessionManager {
    this.managers.set(name, manager);
    manager.onGlobal((frame, wire, principal) => {
      for (const l of this.globalListeners) l(frame, wire, principal);
    });
    return manager;
  }
}

function unavailable(name: string, cause: unknown): TetherError {
  return new TetherError(ErrorCode.StorageUnavailable, `profile store unavailable: ${name}`, { profile: name }, { cause });
}
