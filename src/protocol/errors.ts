/**
 * The error table: every code Tether puts on the wire, with how each transport renders it.
 * A handler throws `TetherError(code)`; the transport looks the code up here. Nothing below
 * the transports invents its own error strings.
 */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  Internal: -32603,
  NotLive: 4001,
  Forbidden: 4003,
  /** The API key was not given the profile the call names (config `auth.keys`: `profiles`). */
  ProfileNotAllowed: 4004,
  NotFound: 4007,
  Busy: 4009,
  Closed: 4010,
  RequestNotFound: 4011,
  RequestResolved: 4012,
  PayloadTooLarge: 4013,
  /** A JSON body or frame nested deeper than `limits.max_json_depth` (refused before it is parsed). */
  JsonTooDeep: 4014,
  /** A client tool's name is a tool the gateway already offers (built-in or MCP). */
  ToolNameTaken: 4020,
  RateLimited: 4029,
  /** The session has no background process of that id (`process.*`). */
  ProcessNotFound: 4030,
  /** A change of a session live on another node that this node cannot reach (no bus between them, or the bus failed). */
  OwnerUnreachable: 4052,
  /** The session named as a room is not one (`room.*`). */
  NotARoom: 4060,
  /** No bot of that name here or on the named peer (`bot.chat`, `message_agent`). */
  UnknownBot: 4061,
  /** Branching: the session has no message of that id (another principal's session answers 4007). */
  MessageNotFound: 4070,
  /** Branching: the message is not a prompt a new version can start from (not a user message, a steer, a delivered result…). */
  NotBranchable: 4071,
  /** Branching: the message lies at or before a compression point (summarized away, or copied into the continuation's head). */
  BranchBeforeCompression: 4072,
  /** Branching, switching versions: a turn runs or waits in the session; stop it first. */
  BranchWhileBusy: 4073,
  /** `session.update { system_prompt }` on a session whose prompt follows its profile's config. */
  SystemPromptFixed: 4074,
  /** `session.steer { turn_id }` (`POST /v1/runs/{id}/steer`) for a turn still queued: it has no model call to join yet. */
  TurnNotStarted: 4075,
  /** `session.create { cwd }` outside every workspace root of the profile (the roots are named). */
  CwdOutsideWorkspace: 4080,
  AtCapacity: 4090,
  /** Quotas per principal (config `quotas`), on every transport: running + queued turns. */
  TooManyTurns: 4101,
  /** The principal's queued prompts would hold more than `quotas.max_queued_prompt_bytes`. */
  QueuedPromptsTooLarge: 4102,
  /** The principal has `quotas.max_live_sessions` live sessions already. */
  TooManyLiveSessions: 4103,
  /** The principal created `quotas.sessions_per_minute` sessions within the last minute. */
  SessionRateExceeded: 4104,
  /** An attachment over the profile's `attachments.max_bytes` (the limit is named). */
  AttachmentTooLarge: 4110,
  /** More attachments in one message than `attachments.max_per_message`. */
  TooManyAttachments: 4111,
  /** A media type outside the profile's `attachments.types`. */
  AttachmentTypeRefused: 4112,
  /** The session's model cannot take that kind of part (the part and the model are named). */
  ModelCannotTakePart: 4113,
  /** An attachment that cannot be read: bad base64, a URL that is not https or data:, an unknown sha256. */
  InvalidAttachment: 4114,
  /** `GET /api/blobs/{sha256}`: no blob of that hash in the caller's sessions (another's answers the same). */
  BlobNotFound: 4115,
  StorageUnavailable: 5070,
} as const;

export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

export interface ErrorInfo {
  /** Stable machine name, used as the OpenAI envelope's `code`. */
  name: string;
  httpStatus: number;
  retryable: boolean;
  message: string;
}

export const ERROR_TABLE: Record<ErrorCodeValue, ErrorInfo> = {
  [-32700]: { name: "parse_error", httpStatus: 400, retryable: false, message: "Parse error" },
  [-32600]: { name: "invalid_request", httpStatus: 400, retryable: false, message: "Invalid request" },
  [-32601]: { name: "method_not_found", httpStatus: 404, retryable: false, message: "Method not found" },
  [-32602]: { name: "invalid_params", httpStatus: 400, retryable: false, message: "Invalid params" },
  [-32603]: { name: "internal_error", httpStatus: 500, retryable: true, message: "Internal error" },
  4001: { name: "session_not_live", httpStatus: 409, retryable: true, message: "Session is not live here; resume it first" },
  4003: { name: "forbidden", httpStatus: 403, retryable: false, message: "Forbidden" },
  4004: { name: "profile_not_allowed", httpStatus: 403, retryable: false, message: "This API key may not use that profile" },
  4007: { name: "session_not_found", httpStatus: 404, retryable: false, message: "Session not found" },
  4009: { name: "busy", httpStatus: 409, retryable: true, message: "Session is busy" },
  4010: { name: "session_closed", httpStatus: 410, retryable: false, message: "Session is closed" },
  4011: { name: "request_not_found", httpStatus: 404, retryable: false, message: "No such open request" },
  4012: { name: "request_already_resolved", httpStatus: 409, retryable: false, message: "The request was already answered" },
  4013: { name: "payload_too_large", httpStatus: 413, retryable: false, message: "Payload too large" },
  4014: { name: "json_too_deep", httpStatus: 400, retryable: false, message: "JSON nested too deep" },
  4020: { name: "tool_name_taken", httpStatus: 400, retryable: false, message: "A client tool has the name of a server tool" },
  4052: { name: "owner_unreachable", httpStatus: 503, retryable: true, message: "The session is live on another node that cannot be reached" },
  4060: { name: "not_a_room", httpStatus: 400, retryable: false, message: "The session is not a room" },
  4061: { name: "unknown_bot", httpStatus: 404, retryable: false, message: "No such bot" },
  4070: { name: "message_not_found", httpStatus: 404, retryable: false, message: "The session has no such message" },
  4071: { name: "not_branchable", httpStatus: 400, retryable: false, message: "A new version can only start from a prompt the user wrote" },
  4072: { name: "branch_before_compression", httpStatus: 409, retryable: false, message: "The message lies before a compression point of this session" },
  4073: { name: "branch_while_busy", httpStatus: 409, retryable: true, message: "A turn runs in this session; stop it first" },
  4075: { name: "turn_not_started", httpStatus: 409, retryable: true, message: "The turn is queued and has not started" },
  4074: { name: "system_prompt_fixed", httpStatus: 409, retryable: false, message: "This session's system prompt follows its profile's config" },
  4030: { name: "process_not_found", httpStatus: 404, retryable: false, message: "No such process in this session" },
  4029: { name: "rate_limited", httpStatus: 429, retryable: true, message: "Rate limited" },
  4080: { name: "cwd_outside_workspace", httpStatus: 403, retryable: false, message: "The cwd lies outside this profile's workspace roots" },
  4090: { name: "at_capacity", httpStatus: 503, retryable: true, message: "Gateway at capacity" },
  4101: { name: "too_many_turns", httpStatus: 429, retryable: true, message: "Too many running and queued turns for this principal" },
  4102: { name: "queued_prompts_too_large", httpStatus: 429, retryable: true, message: "This principal's queued prompts are too large" },
  4103: { name: "too_many_live_sessions", httpStatus: 429, retryable: true, message: "Too many live sessions for this principal" },
  4104: { name: "session_rate_exceeded", httpStatus: 429, retryable: true, message: "Too many new sessions for this principal this minute" },
  4110: { name: "attachment_too_large", httpStatus: 413, retryable: false, message: "The attachment is larger than attachments.max_bytes" },
  4111: { name: "too_many_attachments", httpStatus: 400, retryable: false, message: "More attachments than attachments.max_per_message" },
  4112: { name: "attachment_type_refused", httpStatus: 415, retryable: false, message: "The attachment's media type is not in attachments.types" },
  4113: { name: "model_cannot_take_part", httpStatus: 400, retryable: false, message: "The session's model cannot take this part" },
  4114: { name: "invalid_attachment", httpStatus: 400, retryable: false, message: "The attachment cannot be read" },
  4115: { name: "blob_not_found", httpStatus: 404, retryable: false, message: "Blob not found" },
  5070: { name: "storage_unavailable", httpStatus: 503, retryable: true, message: "Storage unavailable" },
};

/** The one typed error of Tether. `data` travels to the client as JSON-RPC `error.data`. */
export class TetherError extends Error {
  readonly code: ErrorCodeValue;
  readonly data: Record<string, unknown> | undefined;

  constructor(code: ErrorCodeValue, message?: string, data?: Record<string, unknown>, options?: { cause?: unknown }) {
    super(message ?? ERROR_TABLE[code].message, options);
    this.name = "TetherError";
    this.code = code;
    this.data = data;
  }

  get info(): ErrorInfo {
    return ERROR_TABLE[this.code];
  }
}

export function isTetherError(err: unknown): err is TetherError {
  return err instanceof TetherError;
}

/**
 * Why a turn failed, as data: which layer broke, a stable code, and whether retrying the same
 * turn can help. Clients decide what to show (Retry, Switch model) from this, never from text.
 */
export type ErrorLayer = "provider" | "endpoint" | "streaming" | "auth" | "billing" | "gateway" | "storage" | "tool";

export const ERROR_LAYERS: readonly ErrorLayer[] = [
  "provider",
  "endpoint",
  "streaming",
  "auth",
  "billing",
  "gateway",
  "storage",
  "tool",
];

export interface TurnErrorInfo {
  layer: ErrorLayer;
  code: string;
  retryable: boolean;
  message: string;
  /** Seconds the upstream asked to wait before a retry (its `Retry-After`), when it said. */
  retry_after_s?: number;
}
