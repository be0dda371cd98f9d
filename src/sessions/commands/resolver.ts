/**
 * The one place a session command finds where it runs: the live tip of the id asked for (a session
 * compression rotated lands on its continuation) → the node that owns it (forwarded over the bus,
 * or taken over here when that owner is dead) → the live runtime here — once per command. The
 * local step then runs on that runtime (commands/handlers.ts), or the owner's answer comes back.
 *
 *   resolver.run(caller, { kind: "session.interrupt", session_id: id }, (rt) => rt.interrupt());
 *
 * How each kind routes (ROUTES) is the only per-kind knowledge here:
 * - `owned`: work starts here — on a runtime this node still owns (a parked one another node took
 *   over meanwhile is dropped, and the command routed again, to its new owner);
 * - `takeover`: a change that any owner applies (a dead owner's session is taken over first);
 * - `cancel`: like takeover, but a session live nowhere has nothing to cancel (answered idle);
 * - `respond`: like takeover, and a session live nowhere is opened here (its parked turn waits again);
 * - `read`: a read of live state goes to the owner, never takes it over;
 * - `end`: session.close, by a live owner elsewhere, else here (lifecycle/session-ending.ts);
 * - `settings`: session.update, applied where the session lives (cluster/owner-changes.ts).
 */
import { ErrorCode, isRecoverableEnd, TetherError } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { Logger } from "../../lib/logger.js";
import type { GroupCommitter } from "../../events/index.js";
import type { Store } from "../../store/types.js";
import type { LiveRegistry } from "../core/live-registry.js";
import { assertOwner, requireLive, requireRow } from "../core/session-access.js";
import type { CommandKind, CommandOf, SessionCommand } from "../core/session-commands.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import type { Caller } from "../core/types.js";
import type { Ownership } from "../lifecycle/ownership.js";
import { reopenStored } from "../lifecycle/reopening.js";
import type { ViewerBinding } from "../lifecycle/viewer-binding.js";
import { onLiveTip } from "../rotation/tip-routing.js";
import type { NodeRouting, Routed } from "../cluster/node-routing.js";
import { routeOwnerChange, type OwnerChangeDeps } from "../cluster/owner-changes.js";

type Route = "owned" | "takeover" | "cancel" | "respond" | "read" | "end" | "settings";

/** Per kind: how it routes, whether it follows a rotated id to the live tip, and whether its answer names the tip. */
const ROUTES: { [K in CommandKind]: { route: Route; tip?: "follow" | "named" } } = {
  "prompt.submit": { route: "owned", tip: "named" },
  "session.steer": { route: "owned", tip: "named" },
  "session.branch.select": { route: "owned" },
  "session.interrupt": { route: "takeover", tip: "follow" },
  "config.set": { route: "takeover" },
  "turn.cancel": { route: "cancel" },
  "turn.edit": { route: "cancel" },
  "session.close": { route: "end" },
  "request.respond": { route: "respond" },
  "process.list": { route: "read" },
  "process.kill": { route: "read" },
  "process.output": { route: "read" },
  "session.update": { route: "settings" },
};

/** The runtime a kind's local step gets: a cancel or a settings change may find none live (and need none). */
export type RuntimeFor<K extends CommandKind> = K extends "turn.cancel" | "turn.edit" | "session.close" | "session.update" ? SessionRuntime | null : SessionRuntime;

/** The local step of a command: runs on the runtime the resolver found here. */
export type LocalStep<K extends CommandKind, R> = (runtime: RuntimeFor<K>, command: CommandOf<K>) => Promise<R>;

export interface ResolveOptions {
  /**
   * False when the command comes with steps only this node can run first (a turn's client tools,
   * call options or history): a session a live sibling owns is then refused (4001) — not forwarded
   * without them.
   */
  forwardable?: boolean;
  /**
   * A no-input prompt that is the user's continue (`prompt.submit { continue: true }`): it goes to
   * the session's owner like any prompt. Any other no-input prompt (a client's tool results just
   * written here, to be answered) runs only where the session is live: never forwarded, never taken over.
   */
  continued?: boolean;
}

/** What the resolver reads: the same rooms an owner change needs (cluster/owner-changes.ts). */
export type ResolverDeps = OwnerChangeDeps;

export class CommandResolver {
  constructor(private readonly deps: ResolverDeps) {}

  /** Resolves `command` once and runs `local` on the runtime found, or answers with the owner's result. */
  async run<K extends CommandKind, R>(caller: Caller, command: CommandOf<K>, local: LocalStep<K, R>, opts: ResolveOptions = {}): Promise<R> {
    const tip = ROUTES[command.kind as K].tip;
    if (!tip) return this.once(caller, command, local, opts);
    return onLiveTip(this.deps, caller, command.session_id, async (tipId, resolvedFrom) => {
      const result = await this.once(caller, { ...command, session_id: tipId }, local, opts);
      return tip === "named" && resolvedFrom ? { ...result, session_id: tipId, resolved_from: resolvedFrom } : result;
    });
  }

  /** The runtime of `sessionId` live here, for a read of live state (4001 when it is not, 4010 when it ended). */
  live(caller: Caller, sessionId: string, method: string): Promise<SessionRuntime> {
    return requireLive(this.deps, caller, sessionId, method);
  }

  private async once<K extends CommandKind, R>(caller: Caller, command: CommandOf<K>, local: LocalStep<K, R>, opts: ResolveOptions): Promise<R> {
    const found = await this.locate(caller, command, opts);
    // The one cast at the bus's edge: the owner ran the same command, and answers its result.
    if ("forwarded" in found) return found.result as R;
    return local(found.runtime as RuntimeFor<K>, command);
  }

  /** Where `command` runs: forwarded (the owner's answer), or the runtime here. */
  private async locate(caller: Caller, command: SessionCommand, opts: ResolveOptions): Promise<{ forwarded: true; result: unknown } | { runtime: SessionRuntime | null }> {
    const { registry, routing } = this.deps;
    const id = command.session_id;
    switch (ROUTES[command.kind].route) {
      case "owned":
        return this.owned(caller, command, opts);
      case "takeover": {
        const routed = await this.forwardOrTakeOver(caller, command, opts);
        return routed.forwarded ? routed : { runtime: await this.live(caller, id, command.kind) };
      }
      case "cancel": {
        const routed = !registry.get(id) ? await this.forwardOrTakeOver(caller, command, opts) : { forwarded: false as const };
        if (routed.forwarded) return routed;
        const runtime = registry.get(id) ?? null;
        if (runtime) assertOwner(caller, runtime.row);
        else await requireRow(this.deps.store, caller, id);
        return { runtime };
      }
      case "respond": {
        const routed = await this.forwardOrTakeOver(caller, command, opts);
        if (routed.forwarded) return routed;
        const runtime = registry.get(id) ?? (await this.deps.binding.binding(id, () => reopenStored(this.deps, caller, id, isRecoverableEnd)));
        assertOwner(caller, runtime.row);
        return { runtime };
      }
      case "read": {
        const routed = routing ? await routing.forwardToOwner(caller, command) : { forwarded: false as const };
        return routed.forwarded ? routed : { runtime: await this.live(caller, id, command.kind) };
      }
      case "end": {
        // A live owner elsewhere writes the end; else it ends here (opened first when live nowhere).
        const routed = routing ? await routing.forwardToOwner(caller, command) : { forwarded: false as const };
        return routed.forwarded ? routed : { runtime: registry.get(id) ?? null };
      }
      case "settings": {
        if (command.kind !== "session.update") throw new TetherError(ErrorCode.Internal, `${command.kind} is not a settings change`);
        const routed = await routeOwnerChange({ ...this.deps, routing }, caller, command);
        return routed.forwarded ? routed : { runtime: registry.get(id) ?? null };
      }
    }
  }

  /** A command that starts work: on a runtime this node still owns, or at the owner (two tries while it changes hands). */
  private async owned(caller: Caller, command: SessionCommand, opts: ResolveOptions): Promise<{ forwarded: true; result: unknown } | { runtime: SessionRuntime }> {
    const { routing } = this.deps;
    // A no-input turn other than the user's continue answers the history as it stands here (ResolveOptions.continued).
    const here = command.kind === "prompt.submit" && command.no_input === true && !opts.continued;
    for (let attempt = 0; ; attempt++) {
      const routed = here ? { forwarded: false as const } : await this.forwardOrTakeOver(caller, command, opts);
      if (routed.forwarded) return routed;
      const runtime = await this.live(caller, command.session_id, command.kind);
      if (here || !routing || (await routing.stillOwns(runtime))) return { runtime };
      if (attempt >= 1) throw new TetherError(ErrorCode.Busy, `Session ${command.session_id} is changing owner: retry`);
    }
  }

  /** Scale-out: a command for a session not live here goes to its live owner, or the session is taken over here. */
  private async forwardOrTakeOver(caller: Caller, command: SessionCommand, opts: ResolveOptions): Promise<Routed> {
    const { routing, registry } = this.deps;
    if (!routing || registry.has(command.session_id)) return { forwarded: false };
    if (opts.forwardable !== false) return routing.forwardOrTakeOver(caller, command);
    const owner = await routing.liveOwner(caller, command.session_id);
    if (owner) throw new TetherError(ErrorCode.NotLive, `Session ${command.session_id} is live on another node: this turn's settings apply only where it runs`, { method: command.kind });
    await routing.takeOver(caller, command.session_id);
    return { forwarded: false };
  }
}
