/**
 * What each session command does on the runtime the resolver found here (commands/resolver.ts):
 * one function per kind, and `dispatch`, which runs any command — a transport's, or one a sibling
 * node forwarded (cluster/node-routing.ts serves it through here, the same path).
 *
 *   const handlers = new CommandHandlers(deps);
 *   await handlers.dispatch(caller, { kind: "session.steer", session_id: id, text: "shorter" });
 */
import type {
  PartInput,
  BranchSelectResult,
  ClientToolSpec,
  ProcessInfo,
  ProcessOutputPage,
  RequestRespondResult,
  SessionSummary,
  SteerResult,
  SubmitResult,
} from "../../protocol/index.js";
import { AttachmentsSchema } from "../../config/index.js";
import type { Clock } from "../../lib/clock.js";
import type { Logger } from "../../lib/logger.js";
import type { GroupCommitter } from "../../events/index.js";
import type { Store } from "../../store/types.js";
import type { ToolSet } from "../../agent/tools/index.js";
import type { CallOptions } from "../../agent/provider.js";
import { ingestParts, type IngestedParts } from "../core/attachments.js";
import { setClientTools } from "../core/client-tools.js";
import type { LiveRegistry } from "../core/live-registry.js";
import type { LiveSettings } from "../core/live-settings.js";
import type { PrincipalQuotas } from "../core/principal-quotas.js";
import { archiveSession, renameSession, setSystemPrompt, titleFromFirstPrompt } from "../core/session-info.js";
import type { CommandKind, CommandOf, SessionCommand, SubmitCommand } from "../core/session-commands.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import type { Caller } from "../core/types.js";
import type { Lifecycle } from "../lifecycle/lifecycle.js";
import type { SessionEnding } from "../lifecycle/session-ending.js";
import type { ConfigSetResult, ModelSwitching } from "../models/model-switching.js";
import type { ProcessService } from "../processes/process-service.js";
import type { RequestService } from "../requests/request-service.js";
import type { SessionViews } from "../views/session-views.js";
import { onLiveTip } from "../rotation/tip-routing.js";
import type { CommandResolver, ResolveOptions, RuntimeFor } from "./resolver.js";

/** What each kind answers. */
export interface CommandResults {
  "prompt.submit": SubmitResult;
  "session.steer": SteerResult;
  "session.interrupt": { status: "interrupted" | "idle" };
  "turn.cancel": "interrupted" | "dequeued" | "idle";
  "turn.edit": "edited" | "started" | "idle";
  "session.close": { closed: true; end_reason: string };
  "session.branch.select": BranchSelectResult;
  "config.set": ConfigSetResult;
  "request.respond": RequestRespondResult;
  "process.list": { processes: ProcessInfo[] };
  "process.kill": { process: ProcessInfo };
  "process.output": ProcessOutputPage;
  "session.update": SessionSummary;
}

export interface CommandHandlerDeps {
  ending: SessionEnding;
  store: Store;
  committer: GroupCommitter;
  clock: Clock;
  logger: Logger;
  tools: ToolSet;
  quotas?: PrincipalQuotas | undefined;
  settings: LiveSettings;
  registry: LiveRegistry;
  lifecycle: Lifecycle;
  switching: ModelSwitching;
  requests: RequestService;
  processes: ProcessService;
  views: SessionViews;
  resolver: CommandResolver;
}

/** A turn's settings, run on its runtime before the prompt (turn-entry.ts): client tools (absent = unchanged) and call options (absent = none). */
export interface TurnSettings {
  clientTools?: readonly ClientToolSpec[] | undefined;
  callOptions?: CallOptions | undefined;
}

type Handlers = { [K in CommandKind]: (caller: Caller, rt: RuntimeFor<K>, cmd: CommandOf<K>) => Promise<CommandResults[K]> };

export class CommandHandlers {
  private readonly handlers: Handlers;

  constructor(private readonly deps: CommandHandlerDeps) {
    this.handlers = {
      "prompt.submit": (caller, rt, cmd) => this.submit(caller, rt, cmd),
      "session.steer": async (caller, rt, cmd) => {
        // A steer with no turn to join starts one: the turn quotas hold as for a submit.
        if (!rt.turns.running) deps.quotas?.assertTurn(caller.principal, Buffer.byteLength(cmd.text));
        return this.active(rt, await rt.steer(cmd.text, cmd.turn_id));
      },
      "session.branch.select": async (_c, rt, cmd) => this.active(rt, await rt.selectVersion(cmd.message_id)),
      "session.interrupt": async (_c, rt) => ({ status: rt.interrupt() }),
      "turn.cancel": async (_c, rt, cmd) => (rt ? rt.cancelTurn(cmd.turn_id) : "idle"),
      "turn.edit": async (caller, rt, cmd) => {
        if (!rt) return "idle";
        // Growing a waiting prompt holds to the queued-prompt bytes quota, as queueing it did.
        const before = rt.turns.waitingTurn(cmd.turn_id)?.text;
        const grows = before === undefined ? 0 : Buffer.byteLength(cmd.text) - Buffer.byteLength(before);
        if (grows > 0) deps.quotas?.assertQueuedBytes(caller.principal, grows);
        return rt.editQueued(cmd.turn_id, cmd.text);
      },
      "config.set": async (_c, rt, cmd) => deps.switching.set(rt, cmd.key, cmd.value, cmd.confirm ?? false),
      "request.respond": (caller, rt, cmd) => deps.requests.respond(caller, rt, cmd.request_id, cmd.answer),
      "process.list": async (_c, rt) => ({ processes: await deps.processes.list(rt) }),
      "process.kill": async (_c, rt, cmd) => ({ process: await deps.processes.kill(rt, cmd.id) }),
      "process.output": (_c, rt, cmd) => deps.processes.output(rt, cmd.id, { afterOffset: cmd.after_offset, tail: cmd.tail }),
      "session.update": (caller, _rt, cmd) => this.update(caller, cmd),
      "session.close": (caller, _rt, cmd) => deps.ending.close(caller, cmd.session_id),
    };
  }

  /** Runs `command` wherever its session lives (the resolver), with its kind's local step here. */
  dispatch<K extends CommandKind>(caller: Caller, command: CommandOf<K>, opts?: ResolveOptions): Promise<CommandResults[K]> {
    const step = this.handlers[command.kind as K] as Handlers[K];
    return this.deps.resolver.run<K, CommandResults[K]>(caller, command, (rt, cmd) => step(caller, rt, cmd), opts);
  }

  /** Any command, as a forwarded one arrives (its kind known only at run time). */
  dispatchAny(caller: Caller, command: SessionCommand): Promise<unknown> {
    return this.dispatch(caller, command);
  }

  /**
   * A turn: its settings and earlier history on the runtime first, then the prompt — all on the one
   * runtime the resolver found (turn-entry.ts). Unless `forwardable` (nothing to set first), the
   * session must be live here or be taken over: a sibling owner is not sent the prompt without them.
   */
  turn(caller: Caller, command: SubmitCommand, before: (rt: SessionRuntime) => Promise<void>, route: { forwardable: boolean; continued?: boolean }): Promise<SubmitResult> {
    return this.deps.resolver.run<"prompt.submit", SubmitResult>(
      caller,
      command,
      async (rt, cmd) => {
        await before(rt);
        return this.submit(caller, rt, cmd);
      },
      route,
    );
  }

  /** The runtime of `sessionId` live here (4001 when it is not: the client resumes first). */
  live(caller: Caller, sessionId: string, method: string): Promise<SessionRuntime> {
    return this.deps.resolver.live(caller, sessionId, method);
  }

  /** The runtime of the live tip of `sessionId` (a rotated id lands on its continuation), live here. */
  async liveTip(caller: Caller, sessionId: string, method: string): Promise<SessionRuntime> {
    return onLiveTip(this.deps, caller, sessionId, (tipId) => this.live(caller, tipId, method));
  }

  /**
   * A transport's settings for what follows, outside a turn (a tool result sent back): on the
   * session live here; one live elsewhere takes only what it has there already (4001 otherwise).
   */
  async configureSession(caller: Caller, sessionId: string, cfg: TurnSettings): Promise<void> {
    const live = this.deps.registry.get(sessionId);
    if (!live && cfg.clientTools === undefined && cfg.callOptions === undefined) return;
    await this.configure(await this.live(caller, sessionId, "session.update"), cfg);
  }

  /** The client tools (checked against the gateway's: 4020) and call options of what follows. */
  async configure(rt: SessionRuntime, cfg: TurnSettings): Promise<void> {
    if (cfg.clientTools !== undefined) await setClientTools(rt, this.deps.tools, cfg.clientTools);
    rt.setCallOptions(cfg.callOptions);
  }

  /** A prompt's (or an earlier message's, named by `at`) parts, checked against the limits and the model and stored (core/attachments.ts). */
  ingest(caller: Caller, model: string, text: string, parts: readonly PartInput[], at?: string): Promise<IngestedParts> {
    const { settings, store, clock } = this.deps;
    return ingestParts(parts, text, {
      store,
      principal: caller.principal,
      model,
      limits: settings.profile?.attachments ?? settings.attachments ?? AttachmentsSchema.parse({}),
      modalities: settings.models.modalities ?? {},
      now: clock.now(),
      ...(at ? { at } : {}),
    });
  }

  private async submit(caller: Caller, rt: SessionRuntime, cmd: SubmitCommand): Promise<SubmitResult> {
    const ingested = cmd.parts ? await this.ingest(caller, rt.model, cmd.text, cmd.parts) : undefined;
    const result = await rt.submit(ingested?.text ?? cmd.text, cmd.request_id, {
      ...(cmd.no_input ? { noInput: true } : {}),
      ...(cmd.from_message_id !== undefined ? { fromMessageId: cmd.from_message_id } : {}),
      ...(cmd.trace ? { trace: cmd.trace } : {}),
      ...(ingested ? { contentParts: ingested.parts } : {}),
    });
    this.deps.lifecycle.activity(rt);
    if (!cmd.no_input) await titleFromFirstPrompt(this.deps, caller, rt, cmd.text, result);
    return result;
  }

  /** `session.update`, once routed here: each field through its own writer; viewers see a new `session.info`. */
  private async update(caller: Caller, cmd: CommandOf<"session.update">): Promise<SessionSummary> {
    const { patch, session_id: id } = cmd;
    await setSystemPrompt(this.deps, caller, id, patch.system_prompt);
    await renameSession(this.deps, caller, id, patch.title);
    await archiveSession(this.deps, caller, id, patch.archived);
    if (patch.client_tools !== undefined) {
      // A session's client tools live on its runtime: one not live here is refused (4001), not skipped.
      const rt = await this.deps.resolver.live(caller, id, cmd.kind);
      await this.configure(rt, { clientTools: patch.client_tools, callOptions: rt.callOptions });
    }
    return this.deps.views.get(caller, id);
  }

  private active<T>(rt: SessionRuntime, result: T): T {
    this.deps.lifecycle.activity(rt);
    return result;
  }
}
