/** What one turn needs, and what it reports back. Built by the session runtime per turn. */
import type { BranchCreatedPayload, ContentPart, TraceParent, TurnErrorInfo, TurnStatus, Usage } from "../protocol/index.js";
import type { SessionEventLog } from "../events/types.js";
import type { WriteOp } from "../store/types.js";
import type { Clock } from "../lib/clock.js";
import type { IdGenerator } from "../lib/ids.js";
import type { Logger } from "../lib/logger.js";
import type { BlobReader, CallOptions, ChatMessage, Provider, ToolSpec } from "./provider.js";
import type { Modality } from "./model-modalities.js";
import type { TurnRequests } from "./turn-requests.js";
import type { SteerInbox } from "./turn-steering.js";
import type { ToolContext, TodoList, ToolSet } from "./tools/index.js";

export interface TurnContext {
  sessionId: string;
  turnId: string;
  traceId: string;
  /** The caller's span (W3C `traceparent` on the request that started the turn): the turn span's parent. */
  traceParent?: TraceParent;
  input: string;
  /** The prompt's content parts (attachments by reference), when it has more than text. */
  inputParts?: ContentPart[];
  /** Reads attachments' bytes for the model call. */
  blobs?: BlobReader;
  /** Config `models.modalities` (model-modalities.ts): whether a tool result's images go to the model. */
  modalities?: Readonly<Record<string, readonly Modality[]>>;
  /** The id the user message gets (a steered text that became a turn of its own keeps its id); absent = a new one. */
  inputMessageId?: string;
  log: SessionEventLog;
  /**
   * The session's conversation so far. The runner appends the user message, each assistant
   * message and each tool result as it is committed, so the next turn has the context.
   */
  history: ChatMessage[];
  systemPrompt?: string;
  todo: TodoList;
  /** Asked before every model call what it may offer (MCP servers come and go). */
  tools: ToolSet;
  provider: Provider;
  model: string;
  /** Aborting it interrupts the turn: partial text is kept, the turn ends "interrupted". */
  signal: AbortSignal;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  /** Provider calls per turn (the tool-call loop cap). @default 8 */
  maxIterations?: number;
  /** Extra ops committed with `turn.start` (e.g. the active-turn marker, an idempotency row). */
  startOps?: WriteOp[];
  /**
   * The provider's usage of one call, reported before the call's answer joins `history` (so
   * `history.length` then is what the count covered, besides the answer): context counting.
   */
  onStepUsage?: (usage: Usage, historyLength: number) => void;
  /** Durable requests for `ask` tools; absent = such calls are refused (`approval_required`). */
  requests?: TurnRequests;
  /** Asks the user for input during a tool call (MCP elicitation); absent = such requests are declined. */
  requestInput?: ToolContext["requestInput"];
  /** Tools the client executes itself, read at every model call (`session.update` may change them). */
  clientTools?: () => readonly ToolSpec[];
  /**
   * What the transport asks of the model calls (tool choice, parallel calls, sampling parameters),
   * read at every model call. A forced tool choice (`required`, a named function) applies to the
   * first call of each run of the loop only — after the calls it forced, the model may answer.
   */
  callOptions?: () => CallOptions | undefined;
  /** The turn has no new user message: the model answers the history as it stands (tool results a client sent). */
  noInput?: boolean;
  /**
   * Set by the runner on a turn without input whose history ends with the assistant's text: where
   * the continue note goes in this turn's model calls (continuation.ts). Never stored.
   */
  continueAt?: number;
  /** The session's cwd (workspace tools). */
  cwd?: string;
  /** The session's background processes (workspace terminal). */
  processes?: ToolContext["processes"];
  /** The origin `delegate_task` starts from (delegation/origin.ts); absent = the turn cannot delegate. */
  delegation?: ToolContext["delegation"];
  /** Guidance steered into this turn while it runs: joined before each model call (turn-steering.ts). */
  steering?: SteerInbox;
  /**
   * A new version of an earlier prompt (branching): `branch.created` (carrying `ops`, the hide of
   * the old branch) goes right before the user message, which gets `branch_of`.
   */
  branch?: { ops: WriteOp[]; payload(messageId: string): BranchCreatedPayload; branchOf: string };
  /** Retries of a model call that failed with a retryable error. @default none */
  retry?: { maxRetries: number; baseDelayMs: number };
}

/** `awaiting`: the turn parked on open requests (no `turn.complete` yet); `continueTurn` resumes it. */
export type TurnOutcomeStatus = TurnStatus | "awaiting";

export interface TurnOutcome {
  status: TurnOutcomeStatus;
  /** Summed over every provider call of the turn. */
  usage: Usage;
  error?: TurnErrorInfo;
}

export const DEFAULT_MAX_ITERATIONS = 8;
