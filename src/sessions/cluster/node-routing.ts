/**
 * Scale-out: any node serves any client. A call that changes a session live on a sibling node is
 * forwarded to that owner over the bus (and answered as if local); when the owner is dead or its
 * lease expired, this node takes the session over. A session only viewed here is served by the
 * RemoteView (store + bus). On one node (in-process bus) none of this exists.
 */
import { ErrorCode, isRecoverableEnd, TetherError, type Snapshot } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { Logger } from "../../lib/logger.js";
import type { GroupCommitter } from "../../events/index.js";
import { NodeUnreachable, type Bus } from "../../events/bus/index.js";
import type { Store } from "../../store/types.js";
import type { LiveRegistry } from "../core/live-registry.js";
import { requireRow, storage } from "../core/session-access.js";
import type { Caller } from "../core/types.js";
import type { Viewer } from "../core/viewer.js";
import type { Ownership } from "../lifecycle/ownership.js";
import { stillOwnsParked } from "../lifecycle/parked-lease.js";
import { reopenStored } from "../lifecycle/reopening.js";
import type { ViewerBinding } from "../lifecycle/viewer-binding.js";
import type { RemoteView, StoredCut } from "./remote-view.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import type { SessionCommand } from "../core/session-commands.js";
import { decodeCommand, encodeCommand, versionNeeded } from "./command-wire.js";

/** Marks a call forwarded from another node: it runs here, never forwarded again. */
const FORWARDED = Symbol("forwarded");
export type ForwardedCaller = Caller & { [FORWARDED]?: true };

/** Holds a viewer's place in a runtime while its frames come through the bus (sends nothing). */
export function placeholderFor(viewer: Viewer): Viewer {
  return { id: viewer.id, send: () => undefined };
}

/** Runs a command another node forwarded here (commands/resolver.ts: the same path as a local one). */
export type CommandRunner = (caller: Caller, command: SessionCommand) => Promise<unknown>;

export interface NodeRoutingDeps {
  remote: RemoteView;
  bus: Bus;
  store: Store;
  committer: GroupCommitter;
  clock: Clock;
  logger: Logger;
  processId: string;
  /** This manager's handler name on the bus: one per profile. */
  service: string;
  registry: LiveRegistry;
  ownership: Ownership;
  binding: ViewerBinding;
  /** Drops a runtime whose lease another process took, quietly (as a beat that found it lost does). */
  supersede(runtime: SessionRuntime): void;
}

export type Routed = { forwarded: true; result: unknown } | { forwarded: false };

export class NodeRouting {
  readonly remote: RemoteView;

  constructor(private readonly deps: NodeRoutingDeps) {
    this.remote = deps.remote;
  }

  /** Serves commands other nodes forward here; returns the unsubscribe. */
  serve(run: CommandRunner): () => void {
    return this.deps.bus.serve(this.deps.service, (req) => {
      const { principal, command } = decodeCommand(req.method, req.params);
      const caller: ForwardedCaller = { principal, [FORWARDED]: true };
      return run(caller, command);
    });
  }

  /**
   * Routing of a call that changes a session not live here: forwarded to the live node that owns
   * it (answered as if local), or — when the owner is dead or its lease expired — this node takes
   * the session over (recovery marks the dead owner's turn interrupted) and runs it.
   */
  async forwardOrTakeOver(caller: ForwardedCaller, command: SessionCommand): Promise<Routed> {
    const sessionId = command.session_id;
    if (this.deps.registry.has(sessionId)) return { forwarded: false };
    const routed = await this.forwardToOwner(caller, command);
    if (routed.forwarded) return routed;
    await this.takeOver(caller, sessionId);
    return { forwarded: false };
  }

  /**
   * Opens the session here (recovery marks a dead owner's turn interrupted); throws Busy when the
   * owner still holds the lease (alive after all): the honest answer.
   */
  async takeOver(caller: Caller, sessionId: string): Promise<void> {
    const { binding, registry } = this.deps;
    if (registry.has(sessionId)) return;
    await binding.binding(sessionId, async () => {
      const runtime = await reopenStored(this.deps, caller, sessionId, isRecoverableEnd);
      // This node's viewers of the session keep following it through the bus (which now carries
      // this node's frames, recovery included, in order); placeholders keep it from being parked.
      for (const v of this.remote.followersOf(sessionId)) binding.attach(runtime, placeholderFor(v));
      return runtime;
    });
  }

  /**
   * Whether this node still owns a parked session it holds (lifecycle/parked-lease.ts): another
   * node's resume may have taken it, and a call answered from the runtime meanwhile would have
   * every write refused as stale. Lost, the runtime is dropped here and the caller routes again.
   */
  stillOwns(runtime: SessionRuntime): Promise<boolean> {
    return stillOwnsParked(this.deps, runtime);
  }

  /**
   * A call for a session live on a sibling node goes to that owner (answered as if local); else —
   * live here, not live anywhere, or its owner unreachable — it is not forwarded, and the caller
   * answers it here (a read of live state then says 4001). A forwarded call is never forwarded again.
   */
  async forwardToOwner(caller: ForwardedCaller, command: SessionCommand): Promise<Routed> {
    const owner = await this.liveOwner(caller, command.session_id);
    return owner ? this.requestOwner(caller, owner, command) : { forwarded: false };
  }

  /**
   * The live sibling node that owns `sessionId` — null when it is live here, not live anywhere,
   * its owner is dead, or the call was itself forwarded here (it then runs here, never forwarded again).
   */
  async liveOwner(caller: ForwardedCaller, sessionId: string): Promise<string | null> {
    if (this.deps.registry.has(sessionId)) return null;
    await requireRow(this.deps.store, caller, sessionId);
    if (caller[FORWARDED]) return null;
    const lease = await storage(() => this.deps.store.getLease(sessionId));
    if (!lease || lease.owner === this.deps.processId || !(await this.deps.ownership.holderAlive(lease))) return null;
    return lease.owner;
  }

  /**
   * Sends a call to `owner` (the node whose lease the caller read) and answers with its result;
   * `{ forwarded: false }` when that node cannot be reached, or the call was itself forwarded here.
   */
  async requestOwner(caller: ForwardedCaller, owner: string, command: SessionCommand): Promise<Routed> {
    if (caller[FORWARDED]) return { forwarded: false };
    try {
      const result = await this.deps.bus.request(owner, { service: this.deps.service, ...encodeCommand(caller.principal, command) });
      return { forwarded: true, result };
    } catch (err) {
      if (!(err instanceof NodeUnreachable)) throw olderOwnerRefusal(err, owner, command);
      this.deps.logger.warn({ session_id: command.session_id, owner, method: command.kind }, "owner unreachable: not forwarded");
      return { forwarded: false };
    }
  }

  /** A session owned by a live sibling node: its Snapshot, and `viewer` follows it through the bus. */
  async resumeRemote(caller: Caller, sessionId: string, viewer: Viewer | undefined, afterSeq?: number): Promise<Snapshot> {
    const row = await requireRow(this.deps.store, caller, sessionId);
    const snap = await storage(() => this.remote.snapshot(row, afterSeq));
    if (viewer) this.remote.follow(sessionId, snap.latest_seq, viewer);
    return snap;
  }

  /**
   * since() of a session a live sibling owns, from the store and the bus; null when the session is
   * not served remotely (the caller answers it here). The store half of the answer is read beside
   * the access checks, not after them: a catch-up on a non-owner node waits for two round trips
   * (store, then bus), not three. When the checks say no, that read is dropped.
   */
  async remoteSince<T>(
    caller: Caller,
    sessionId: string,
    afterSeq: number,
    answer: (remote: RemoteView, stored: Promise<StoredCut>) => Promise<T>,
  ): Promise<T | null> {
    if (this.deps.registry.has(sessionId)) return null;
    const stored = this.remote.readStored(sessionId, afterSeq);
    stored.catch(() => undefined); // awaited below only when the session is remote
    const remote = await this.remoteFor(caller, sessionId);
    return remote ? storage(() => answer(remote, stored)) : null;
  }

  /** The remote view when `sessionId` is not live here but a sibling node holds its lease. */
  async remoteFor(caller: Caller, sessionId: string): Promise<RemoteView | null> {
    if (this.deps.registry.has(sessionId)) return null;
    // Both reads at once (a catch-up on a non-owner node pays one round trip here, not two); the
    // lease is looked at only once the row says the caller may see the session.
    const [, lease] = await Promise.all([requireRow(this.deps.store, caller, sessionId), storage(() => this.deps.store.getLease(sessionId))]);
    return lease && lease.owner !== this.deps.processId ? this.remote : null;
  }
}

/**
 * An owner of an older version refuses a command it would read only in part (cluster/command-wire.ts:
 * `kind@vN`, "cannot forward …"): the caller is told why, with a code, instead of an internal error.
 */
function olderOwnerRefusal(err: unknown, owner: string, command: SessionCommand): unknown {
  const needed = versionNeeded(command);
  if (needed === 0 || !(err instanceof TetherError) || err.code !== ErrorCode.Internal || !/cannot forward/i.test(err.message)) return err;
  return new TetherError(
    ErrorCode.OwnerUnreachable,
    `Session ${command.session_id} runs on a node of an older version, which cannot take this ${command.kind} (it needs command wire version ${needed}); retry once that node is upgraded`,
    { method: command.kind, owner, wire_version: needed },
  );
}
