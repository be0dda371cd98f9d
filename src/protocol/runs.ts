/**
 * The runs API's wire shapes (`/v1/runs`, docs/protocol.md "Runs API"): the run object, its
 * statuses and the names of its SSE events. Shared by the gateway and the SDK's run helpers.
 */
import type { OpenRequest } from "./requests.js";
import type { TurnErrorInfo } from "./errors.js";
import type { Usage } from "./types.js";

export type RunStatus = "queued" | "running" | "waiting" | "completed" | "failed" | "cancelled" | "interrupted";

export const TERMINAL_RUN_STATUSES: ReadonlySet<string> = new Set(["completed", "failed", "cancelled", "interrupted"]);

export const RunEventType = {
  Started: "run.started",
  MessageDelta: "message.delta",
  ReasoningDelta: "reasoning.delta",
  ToolStarted: "tool.started",
  ToolCompleted: "tool.completed",
  RequestOpened: "request.opened",
  RequestResolved: "request.resolved",
  Steered: "run.steered",
  Completed: "run.completed",
  Failed: "run.failed",
  Cancelled: "run.cancelled",
} as const;

/** The events after which a run's stream ends. */
export const TERMINAL_RUN_EVENTS: ReadonlySet<string> = new Set([RunEventType.Completed, RunEventType.Failed, RunEventType.Cancelled]);

export interface RunObject {
  object: "run";
  run_id: string;
  status: RunStatus;
  session_id: string;
  model: string;
  /** Seconds since the Unix epoch, as OpenAI's objects count them. */
  created_at: number;
  updated_at: number;
  /** The run's answer: the text of its turn's last assistant message, once it is over. */
  output?: string;
  usage?: Usage;
  error?: TurnErrorInfo;
  /** What the run waits for (status `waiting`): answer with `POST /v1/runs/{id}/approval`. */
  open_requests?: OpenRequest[];
}

/** `POST /v1/runs`' 202 answer. */
export interface RunCreated {
  run_id: string;
  status: RunStatus;
  session_id: string;
}

export interface RunCreateParams {
  input: string | Array<{ role: "system" | "developer" | "user" | "assistant"; content: string }>;
  session_id?: string;
  instructions?: string;
  previous_response_id?: string;
  model?: string;
}

/** One event of `GET /v1/runs/{id}/events`: `id` (the SSE id) resumes the stream after it. */
export interface RunStreamEvent {
  id: string;
  event: string;
  data: { run_id: string; [key: string]: unknown };
}
