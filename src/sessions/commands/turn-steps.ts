/**
 * A turn's steps on its session's runtime, in order — its settings (client tools, call options),
 * the earlier history a stateless client sent, then the prompt — resolved once for all three
 * (commands/resolver.ts), where the turn entry (turn-entry.ts) used to look the session up for each.
 */
import type { ClientToolSpec, PartInput, SubmitResult, TraceParent } from "../../protocol/index.js";
import type { CallOptions } from "../../agent/provider.js";
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import { storage } from "../core/session-access.js";
import { ingestSeedParts, seedHistory, type SeedMessage } from "../core/seed-history.js";
import type { SubmitCommand } from "../core/session-commands.js";
import type { Caller } from "../core/types.js";
import type { CommandHandlers } from "./handlers.js";

/** What a turn sets on its session first: client tools (absent = unchanged) and call options (absent = none). */
export interface TurnConfig {
  clientTools?: readonly ClientToolSpec[] | undefined;
  callOptions?: CallOptions | undefined;
}

/** How a submit differs from a plain prompt. */
export interface SubmitOptions {
  noInput?: boolean;
  /** The no-input turn is the user's continue: it may run at the session's owner (ResolveOptions.continued). */
  continued?: boolean;
  fromMessageId?: string;
  /** The caller's span: the turn's trace id is its trace id, the turn span its child. */
  trace?: TraceParent;
  /** Content parts of the prompt (taken in by the session's owner: core/attachments.ts). */
  parts?: readonly PartInput[];
}

/** What one turn does on its session's runtime, in order. */
export interface TurnSteps {
  /** Absent: the session's settings stay as they are (a plain prompt). */
  config?: TurnConfig;
  /** Earlier messages written first; `wait: false` answers before they are stored (`stored` settles then). */
  history?: { messages: readonly SeedMessage[]; wait: boolean };
  text: string;
  requestId?: string;
  opts: SubmitOptions;
}

export interface TurnRan {
  result: SubmitResult;
  /** The session's latest seq after the history, when one was written. */
  latestSeq?: number;
  stored?: Promise<void>;
}

export async function runTurn(deps: { clock: Clock; ids: IdGenerator }, commands: CommandHandlers, caller: Caller, sessionId: string, steps: TurnSteps): Promise<TurnRan> {
  const { opts, config, history } = steps;
  const command: SubmitCommand = {
    kind: "prompt.submit",
    session_id: sessionId,
    text: steps.text,
    ...(steps.requestId !== undefined ? { request_id: steps.requestId } : {}),
    ...(opts.fromMessageId !== undefined ? { from_message_id: opts.fromMessageId } : {}),
    ...(opts.parts ? { parts: opts.parts } : {}),
    ...(opts.trace ? { trace: opts.trace } : {}),
    ...(opts.noInput ? { no_input: true as const } : {}),
  };
  const ran: Omit<TurnRan, "result"> = {};
  // Only settings that say something, or a history, keep the turn from going to a sibling owner as it is.
  const localOnly = config?.clientTools !== undefined || config?.callOptions !== undefined || history !== undefined;
  const result = await commands.turn(
    caller,
    command,
    async (rt) => {
      if (config) await commands.configure(rt, config);
      if (!history) return;
      // Earlier messages' attachments are taken in as a prompt's are, before anything is written.
      const seeded = await ingestSeedParts(history.messages, (parts, at) => commands.ingest(caller, rt.model, "", parts, at));
      ran.latestSeq = await storage(() => seedHistory(rt, seeded, deps.clock, deps.ids, { wait: history.wait }));
      if (!history.wait) ran.stored = rt.log.settled();
    },
    { forwardable: !localOnly, ...(opts.continued ? { continued: true } : {}) },
  );
  return { result, ...ran };
}

/** A prompt on the live tip (a rotated id lands on its continuation): a turn with no settings of its own. */
export async function submitPrompt(
  deps: { clock: Clock; ids: IdGenerator },
  commands: CommandHandlers,
  caller: Caller,
  sessionId: string,
  prompt: Pick<TurnSteps, "text" | "requestId" | "opts">,
): Promise<SubmitResult> {
  return (await runTurn(deps, commands, caller, sessionId, prompt)).result;
}
