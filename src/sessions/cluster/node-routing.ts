/**
 * Scale-out: any node serves any client. A call that changes a session live on a sibling node is
 * forwarded to that owner over the bus (and answered as if local); when the owner is dead or its
 * lease expired, this node takes the session over. A session only viewed here is served by the
 * RemoteView (store + bus). On one node (in-process bus) none of this exists.
 */
import { ErrorCode, isRecoverableEnd, parseTraceparent, TetherError, type ClientToolSpec, type PartInput, type Snapshot, type SubmitResult } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { Logger } from "../../lib/logger.js";
import type { GroupCommitter } from "../../events/index.js";
import { NodeUnreachable, type Bus, type BusRequest } from "../../events/bus/index.js";
import type { Store } from "../../store/types.js";
import type { LiveRegistry } from "../core/live-registry.js";
import { requireRow, storage } from "../core/session-access.js";
import type { Caller } from "../core/types.js";
import type { Viewer } from "../core/viewer.js";
import type { Ownership } from "../lifecycle/ownership.js";
import { stillOwnsParked } from "../lifecycle/parked-lease.js";
import { reopenStored } from "../lifecycle/reopening.js";
import type { ViewerBinding } from "../lifecycle/viewer-binding.js";
import type { ConfigSetResult } from "../models/model-switching.js";
import type { RemoteView, StoredCut } from "./remote-view.js";
import type { SessionRuntime } from "../core/session-runtime.js";

/** Marks a call forwarded from another node: it runs here, never forwarded again. */
const FORWARDED = Symbol("forwarded");
export type ForwardedCaller = Caller & { [FORWARDED]?: true };

/** Holds a viewer's place in a runtime while its frames come through the bus (sends nothing). */
export function placeholderFor(viewer: Viewer): Viewer {
  return { id: viewer.id, send: () => undefined };
}

/** The calls a sibling node may forward here: the manager's own. */
export interface ForwardedCalls {
  submit(caller: Caller, sessionId: string, text: string, requestId?: string, opts?: { fromMessageId?: string }): Promise<SubmitResult>;
  selectBranch(caller: Caller, sessionId: string, messageId: string): Promise<unknown>;
  interrupt(caller: Caller, sessionId: string): Promise<{ status: "interrupted" | "idle" }>;
  steer(caller: Caller, sessionId: string, text: string, turnId?: string): Promise<unknown>;
  cancelTurn(caller: Caller, sessionId: string, turnId: string): Promise<"interrupted" | "dequeued" | "idle">;
  editQueued(caller: Caller, sessionId: string, turnId: string, text: string): Promise<"edited" | "started" | "idle">;
  configSet(caller: Caller, sessionId: string, key: string, value: unknown, confirm?: boolean): Promise<ConfigSetResult>;
  respond(caller: Caller, sessionId: string, requestId: string, answer: Record<string, unknown>): Promise<unknown>;
  processList(caller: Caller, sessionId: string): Promise<unknown>;
  processKill(caller: Caller, sessionId: string, id: string): Promise<unknown>;
  processOutput(caller: Caller, sessionId: string, id: string, opts: { afterOffset?: number | undefined; tail?: number | undefined }): Promise<unknown>;
  update(caller: Caller, sessionId: string, patch: SessionPatch): Promise<unknown>;
}

/** What `session.update` changes (each field optional: absent = unchanged). */
export interface SessionPatch {
  title?: string;
  client_tools?: ClientToolSpec[];
  archived?: boolean;
  system_prompt?: string;
}

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

  /** Serves calls other nodes forward here; returns the unsubscribe. */
  serve(calls: ForwardedCalls): () => void {
    return this.deps.bus.serve(this.deps.service, (req) => this.serveForwarded(calls, req));
  }

  /** Runs a call another node forwarded here (this node owns the session, or takes it over). */
  private async serveForwarded(calls: ForwardedCalls, req: BusRequest): Promise<unknown> {
    const p = req.params as {
      principal: string;
      session_id: string;
      text?: string;
      request_id?: string;
      key?: string;
      value?: unknown;
      confirm?: boolean;
      answer?: Record<string, unknown>;
      turn_id?: string;
      id?: string;
      after_offset?: number;
      tail?: number;
      from_message_id?: string;
      message_id?: string;
      traceparent?: string;
      tracestate?: string;
      patch?: SessionPatch;
      parts?: PartInput[];
    };
    const caller: ForwardedCaller = { principal: p.principal, [FORWARDED]: true };
    switch (req.method) {
      case "prompt.submit": {
        const trace = parseTraceparent(p.traceparent, p.tracestate);
        return calls.submit(caller, p.session_id, p.text ?? "", p.request_id, {
          ...(p.from_message_id !== undefined ? { fromMessageId: p.from_message_id } : {}),
          ...(trace ? { trace } : {}),
          // As the client sent them: this node (the owner) takes them in against its session's model.
          ...(p.parts ? { parts: p.parts } : {}),
        });
      }
      case "session.branch.select":
        return calls.selectBranch(caller, p.session_id, p.message_id ?? "");
      case "session.interrupt":
        return calls.interrupt(caller, p.session_id);
      case "session.steer":
        return calls.steer(caller, p.session_id, p.text ?? "", p.turn_id);
      case "turn.cancel":
        return calls.cancelTurn(caller, p.session_id, p.turn_id ?? "");
      case "turn.edit":
        return calls.editQueued(caller, p.session_id, p.turn_id ?? "", p.text ?? "");
      case "config.set":
        return calls.configSet(caller, p.session_id, p.key ?? "", p.value, p.confirm ?? false);
      case "request.respond":
        return calls.respond(caller, p.session_id, p.request_id ?? "", p.answer ?? {});
      case "process.list":
        return calls.processList(caller, p.session_id);
      case "process.kill":
        return calls.processKill(caller, p.session_id, p.id ?? "");
      case "process.output":
        return calls.processOutput(caller, p.session_id, p.id ?? "", { afterOffset: p.after_offset, tail: p.tail });
      case "session.update":
        return calls.update(caller, p.session_id, p.patch ?? {});
      default:
        throw new TetherError(ErrorCode.Internal, `cannot forward ${req.method}`);
    }
  }

  /**
   * Routing of a call that changes a session not live here: forwarded to the live node that owns
   * it (answered as if local), or — when the owner is dead or its lease expired — this node takes
   * the session over (recovery marks the dead owner's turn interrupted) and runs it.
   */
  async forwardOrTakeOver(caller: ForwardedCaller, sessionId: string, method: string, params: Record<string, unknown>): Promise<Routed> {
    const { registry } = this.deps;
    if (registry.has(sessionId)) return { forwarded: false };
    const routed = await this.forwardToOwner(caller, sessionId, method, params);
    if (routed.forwarded) return routed;
    if (!registry.has(sessionId)) {
      // Throws Busy when the owner still holds the lease (alive after all): the honest answer.
      const { binding } = this.deps;
      await binding.binding(sessionId, async () => {
        const runtime = await reopenStored(this.deps, caller, sessionId, isRecoverableEnd);
        // This node's viewers of the session keep following it through the bus (which now carries
        // this node's frames, recovery included, in order); placeholders keep it from being parked.
        for (const v of this.remote.followersOf(sessionId)) binding.attach(runtime, placeholderFor(v));
        return runtime;
      });
    }
    return { forwarded: false };
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
  async forwardToOwner(caller: ForwardedCaller, sessionId: string, method: string, params: Record<string, unknown>): Promise<Routed> {
    const { registry } = this.deps;
    if (registry.has(sessionId)) return { forwarded: false };
    await requireRow(this.deps.store, caller, sessionId);
    if (caller[FORWARDED]) return { forwarded: false };
    const lease = await storage(() => this.deps.store.getLease(sessionId));
    if (!lease || lease.owner === this.deps.processId || !(await this.ownerAlive(lease.owner, lease.expires_at))) return { forwarded: false };
    return this.requestOwner(caller, lease.owner, sessionId, method, params);
  }

  /**
   * Sends a call to `owner` (the node whose lease the caller read) and answers with its result;
   * `{ forwarded: false }` when that node cannot be reached, or the call was itself forwarded here.
   */
  async requestOwner(caller: ForwardedCaller, owner: string, sessionId: string, method: string, params: Record<string, unknown>): Promise<Routed> {
    if (caller[FORWARDED]) return { forwarded: false };
    try {
      const result = await this.deps.bus.request(owner, {
        service: this.deps.service,
        method,
        params: { principal: caller.principal, session_id: sessionId, ...params },
      });
      return { forwarded: true, result };
    } catch (err) {
      if (!(err instanceof NodeUnreachable)) throw err;
      this.deps.logger.warn({ session_id: sessionId, owner, method }, "owner unreachable: not forwarded");
      return { forwarded: false };
    }
  }

  private async ownerAlive(owner: string, leaseExpiresAt: number): Promise<boolean> {
    const now = this.deps.clock.now();
    if (leaseExpiresAt < now) return false;
    const beat = await storage(() => this.deps.store.getHeartbeat(owner));
    return beat !== null && beat.last_beat >= this.deps.ownership.deadBefore(now);
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
