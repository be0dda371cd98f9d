/**
 * The transcript of one session as a UI shows it: blocks in order, each with a stable key
 * (message_id, call_id, turn_id, delegation_id), plus the session's state around them. Built from
 * a Snapshot and kept up to date by frames (transcript.ts); plain data, no DOM.
 */
import type {
  AttachmentPart,
  DelegationKind,
  DelegationResultMetadata,
  DelegationSummary,
  DelegationTaskSummary,
  OpenRequest,
  ProcessInfo,
  StopReason,
  TodoItem,
  Usage,
} from "../../protocol/index.js";

/** A turn's failure as an error card shows it (`turn.error`, a stored error message). */
export interface TurnErrorInfo {
  layer: string;
  code: string;
  retryable: boolean;
  message: string;
}

export type Block =
  | {
      kind: "user";
      key: string;
      text: string;
      /** The prompt's attachments (Message.parts without its text), by sha256 or url. */
      attachments?: AttachmentPart[];
      turnId?: string;
      /** Every version of this prompt, oldest first (the gateway's branching), when there are several. */
      versions?: string[];
    }
  | {
      kind: "assistant";
      key: string;
      text: string;
      reasoning: string;
      status: "streaming" | "complete" | "interrupted" | "error";
      turnId?: string;
      /** Why an interrupted reply stopped, as the gateway stored it (the same in every viewer). */
      stopReason?: StopReason;
    }
  | {
      kind: "tool";
      key: string;
      name: string;
      args: unknown;
      result?: unknown;
      error?: string;
      durationMs?: number;
      done: boolean;
      /** Its call waits for an approval (an open request names it). */
      awaiting?: boolean;
    }
  | {
      kind: "error";
      key: string;
      error?: TurnErrorInfo;
      turnId?: string;
      traceId?: string;
      /** The prompt of the failed turn, for Retry. */
      input?: string;
      /** It arrived live while the view watched (announce it); not one rebuilt from a snapshot. */
      fresh?: boolean;
    }
  | {
      kind: "delegation";
      /** The delegation_id. */
      key: string;
      /** `delegate` (delegate_task) or `review` (/review). */
      delegationKind: DelegationKind;
      /** running → completed (every task ended, delivery pending) → delivered. */
      status: DelegationSummary["status"];
      tasks: DelegationTaskView[];
      /** Start to completion, once known (the delivered metadata's `duration_ms`). */
      durationMs?: number;
      /** The message_id of the delivered result (its result card's key). */
      resultKey?: string;
    }
  | {
      kind: "delegation-result";
      /** The message_id of the delivered message. */
      key: string;
      delegationId: string;
      delegationKind: DelegationKind;
      /** The message's Markdown, without its leading `[… complete — …]` line (the card's head says it). */
      text: string;
      completed: number;
      failed: number;
      total: number;
      durationMs?: number;
      tasks: DelegationTaskView[];
    }
  | { kind: "notice"; key: string; text: string; tone: "info" | "warn" };

export type BlockOf<K extends Block["kind"]> = Extract<Block, { kind: K }>;

/** One sub-agent task as a card shows it. */
export interface DelegationTaskView {
  goal: string;
  status: DelegationTaskSummary["status"];
  error?: string;
  childSessionId?: string;
  durationMs?: number;
}

/** `display_metadata` of a delivered delegation result: the protocol's shape (docs/protocol.md). */
export type { DelegationResultMetadata };

/** A prompt sent and not yet started as a turn (optimistic: shown before the gateway answers). */
export interface PendingPrompt {
  /** The request_id sent with prompt.submit (idempotent retry key). */
  requestId: string;
  text: string;
  status: "sending" | "queued" | "failed";
  turnId?: string;
  error?: string;
  /** Regenerate / edit-and-resend: the user message this prompt is a new version of (`from_message_id`). */
  replaces?: string;
  /** A continue (`prompt.submit { continue: true }`): no text, the last reply goes on. */
  continues?: true;
}

export interface SessionModel {
  sessionId: string;
  title: string;
  profile: string;
  model: string;
  provider: string;
  state: "live" | "detached" | "idle" | "ended";
  endReason?: string;
  running: boolean;
  currentTurn?: string;
  blocks: Block[];
  todo: { revision: number; items: TodoItem[] };
  pending: PendingPrompt[];
  /** What the session waits for (approvals, input), oldest first: shown as cards until answered. */
  requests: OpenRequest[];
  /** A model switch stashed until the running turn ends. */
  pendingModel?: string;
  /** The session's own system prompt (absent: the profile's applies) and whether it may change. */
  systemPrompt?: string;
  systemPromptFixed?: boolean;
  /** Token usage of each finished assistant message (`message.complete.usage`, or the stored Message's `usage`). */
  usage: Record<string, Usage>;
  /** The session's context as the gateway counted it for the Snapshot (`context_tokens`). */
  contextTokens?: number;
  /**
   * Background processes (`process.started` / `process.exited`, `process.output` appended to the
   * tail), by id; seeded by SessionView from `process.list` when it opens the session.
   */
  processes?: Record<string, ProcessInfo>;
  /** Bumped on every change, so views can tell. */
  version: number;
}
