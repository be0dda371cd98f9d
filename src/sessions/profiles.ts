/**
 * Profiles: each has its own store, its own SessionManager and its own HTTP records (work,
 * personal, a bot). The default profile is opened at start and owned by the process; others open
 * on first use. A profile whose store cannot be opened fails that call with 5070 — it never falls
 * back to another profile's store, so one profile's turns can never land in another's database.
 *
 * Transports see only this registry. The RPC dispatcher and the HTTP API resolve a request's
 * profile here once and hand the handler that profile; to the WebSocket endpoint the registry
 * also looks like one manager: one epoch, global frames from every profile, and a disconnect
 * detaches the viewer everywhere.
 */
import { ErrorCode, TetherError, type StatsResult } from "../protocol/index.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../lib/logger.js";
import { randomIds, type IdGenerator } from "../lib/ids.js";
import type { RemoteAgents } from "./messaging/outbox.js";
import type { Bus } from "../events/bus/index.js";
import type { Caller, GlobalListener } from "./core/types.js";
import type { Viewer } from "./core/viewer.js";
import type { HttpRecords } from "./http-records.js";
import type { SessionManager } from "./session-manager.js";
import type { Directory } from "./messaging/directory.js";
import { Messaging, type MessagingSettings } from "./messaging/messaging.js";

export const DEFAULT_PROFILE = "default";

/** One profile: its sessions and the HTTP API's records, both in the profile's own store. */
export interface Profile {
  readonly name: string;
  readonly sessions: SessionManager;
  readonly records: HttpRecords;
}

export interface ProfileRegistryDeps {
  /**
   * Makes the default profile, handed the process's messaging (its `message_agent` tool sends
   * through the outbox): the messaging exists first, so nothing is wired in after the profiles.
   */
  defaultProfile: (messaging: Messaging) => Profile;
  /** Names of the configured profiles besides `default` (read at each call: config reloads). */
  profileNames: () => string[];
  /** Opens a profile's store and starts its manager; throws when the store cannot be opened. */
  open: (name: string, messaging: Messaging) => Promise<Profile>;
  logger: Logger;
  clock: Clock;
  /** A call waits at most this long for a profile's store to open, then answers 5070. @default 10_000 */
  openTimeoutMs?: number;
  /** A profile's bot (config `profiles.NAME.bot`), read at each call. */
  botOf?: (profile: string) => { name: string; description: string } | undefined;
  /** `messaging.room_hop_limit`, read at each decision. @default 3 */
  roomHopLimit?: () => number;
  /** `messaging.poll_s`, `push` and `claim_ttl_s`, read at each decision. @default 30 s, push on, 5 s */
  outbox?: () => MessagingSettings;
  ids?: IdGenerator;
  /** Names this process in the outbox's claims. */
  processId?: string;
  /** Bots of peer gateways (A2A, config `peers`). */
  remote?: RemoteAgents;
  /** Scale-out: the outbox's wakes between nodes. */
  bus?: Bus;
}

export const PROFILE_OPEN_TIMEOUT_MS = 10_000;

export class ProfileRegistry {
  private readonly profiles = new Map<string, Profile>();
  private readonly opening = new Map<string, Promise<Profile>>();
  private readonly globalListeners = new Set<GlobalListener>();
  /** Bots and rooms across this gateway's profiles. */
  readonly messaging: Messaging;

  /** The profile made at construction (`default`). */
  readonly defaultProfile: Profile;

  constructor(private readonly deps: ProfileRegistryDeps) {
    // Bots and rooms first: a profile's tools send through them. Its directory reads the profiles
    // only when a message goes out, by then they exist.
    this.messaging = new Messaging({
      directory: this.directory(),
      logger: deps.logger,
      hopLimit: deps.roomHopLimit ?? (() => 3),
      clock: deps.clock,
      ids: deps.ids ?? randomIds,
      processId: deps.processId ?? `proc-${deps.clock.now()}`,
      outbox: deps.outbox ?? (() => ({ poll_s: 30, push: true, claim_ttl_s: 5 })),
      ...(deps.remote ? { remote: deps.remote } : {}),
      ...(deps.bus ? { bus: deps.bus } : {}),
    });
    this.defaultProfile = this.adopt(deps.defaultProfile(this.messaging));
  }

  /** Every profile by its bot name (or its own), and its messaging wing. */
  private directory(): Directory {
    return {
      entries: () =>
        [DEFAULT_PROFILE, ...this.deps.profileNames()].map((profile) => {
          const bot = this.deps.botOf?.(profile);
          return { profile, name: bot?.name ?? profile, description: bot?.description ?? "", bot: bot !== undefined };
        }),
      wing: async (profile) => (await this.profile(profile)).sessions.work,
      senders: async () => {
        const names = new Set([DEFAULT_PROFILE, ...this.deps.profileNames().filter((p) => this.deps.botOf?.(p)), ...this.profiles.keys()]);
        const wings = await Promise.allSettled([...names].map(async (p) => (await this.profile(p)).sessions.work));
        return wings.flatMap((w) => (w.status === "fulfilled" ? [w.value] : []));
      },
    };
  }

  get epoch(): string {
    return this.defaultProfile.sessions.epoch;
  }

  /** The profile named `name` (default when absent), opening its store on first use. */
  async profile(name: string | undefined): Promise<Profile> {
    const wanted = name ?? DEFAULT_PROFILE;
    const open = this.profiles.get(wanted);
    if (open) return open;
    if (!this.deps.profileNames().includes(wanted)) {
      throw new TetherError(ErrorCode.InvalidParams, `Invalid params: unknown profile "${wanted}"`, {
        issues: [{ path: "profile", message: `not one of: ${[DEFAULT_PROFILE, ...this.deps.profileNames()].join(", ")}` }],
      });
    }
    let opening = this.opening.get(wanted);
    if (!opening) {
      opening = this.deps
        .open(wanted, this.messaging)
        .then((p) => this.adopt(p))
        .catch((err: unknown) => {
          this.deps.logger.error({ err, profile: wanted }, "profile store unavailable");
          throw unavailable(wanted, err);
        })
        .finally(() => this.opening.delete(wanted));
      this.opening.set(wanted, opening);
    }
    return this.withinTimeout(wanted, opening);
  }

  /**
   * A store that hangs while opening (a dead network mount, an unreachable database) fails the
   * call with 5070 after the timeout; the open goes on, and a later call waits for that same open
   * again (never a second one beside it), so a store that comes back serves from then on.
   */
  private withinTimeout(name: string, opening: Promise<Profile>): Promise<Profile> {
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

  /** The sessions of the profile named `name` (see `profile`). */
  async manager(name: string | undefined): Promise<SessionManager> {
    return (await this.profile(name)).sessions;
  }

  /** Every profile opened so far. */
  all(): Profile[] {
    return [...this.profiles.values()];
  }

  onGlobal(listener: GlobalListener): () => void {
    this.globalListeners.add(listener);
    return () => this.globalListeners.delete(listener);
  }

  detachViewer(viewer: Viewer): void {
    for (const p of this.profiles.values()) p.sessions.detachViewer(viewer);
  }

  /** `session.events.stats` over every open profile, scoped to the caller's principal. */
  stats(caller: Caller): StatsResult {
    const out: StatsResult = { sessions: 0, ring_frames: 0, ring_bytes: 0, active_turns: [] };
    for (const p of this.profiles.values()) {
      const s = p.sessions.stats(caller);
      out.sessions += s.sessions;
      out.ring_frames += s.ring_frames;
      out.ring_bytes += s.ring_bytes;
      out.active_turns.push(...s.active_turns);
    }
    return out;
  }

  private adopt(profile: Profile): Profile {
    this.profiles.set(profile.name, profile);
    profile.sessions.onGlobal((frame, wire, principal) => {
      for (const l of this.globalListeners) l(frame, wire, principal);
    });
    return profile;
  }
}

function unavailable(name: string, cause: unknown): TetherError {
  return new TetherError(ErrorCode.StorageUnavailable, `profile store unavailable: ${name}`, { profile: name }, { cause });
}
