/**
 * Open requests: something a turn waits for from a person or a client — a tool approval, a tool a
 * client executes itself, input an MCP server asked for. Durable (`request.opened` is stored with
 * the assistant message that made the call), shown in every Snapshot (`open_requests`), answered
 * once by `request.respond` from any viewer, process or node.
 */

export const RequestKind = {
  /** A tool call whose policy is `ask`: approve it (once, for the session, always) or deny it. */
  Approval: "approval",
  /** A tool the client declared and executes itself: answered with its output or error. */
  ClientTool: "client_tool",
  /** An MCP server asked the user for input (elicitation): answered with content, or declined. */
  Input: "input",
} as const;

export type RequestKindName = (typeof RequestKind)[keyof typeof RequestKind];

/** Kinds whose requests park their turn (an input request waits inside a running call instead). */
export function parksTurn(kind: string): boolean {
  return kind === RequestKind.Approval || kind === RequestKind.ClientTool;
}

/** The choices of an approval, in the order a client shows them. */
export const APPROVAL_CHOICES = ["once", "session", "always", "deny"] as const;
export type ApprovalChoice = (typeof APPROVAL_CHOICES)[number];

/** The choices of an input request. */
export const INPUT_CHOICES = ["accept", "decline", "cancel"] as const;
export type InputChoice = (typeof INPUT_CHOICES)[number];

/**
 * How a request was settled when no person chose: `timeout` (`tools.approval_timeout_s` passed:
 * resolved as `deny`), `cancelled` (`session.interrupt`, or the session was closed), `gateway`
 * (the process the call depended on stopped: an MCP elicitation whose call died).
 */
export type ResolutionReason = "timeout" | "cancelled" | "gateway";

/** `request.opened` (durable). */
export interface RequestOpenedPayload {
  request_id: string;
  kind: RequestKindName;
  /** The tool call it belongs to (approval, client_tool; input: the call that asked). */
  call_id?: string;
  tool?: string;
  args?: unknown;
  /** approval: APPROVAL_CHOICES; input: INPUT_CHOICES. */
  choices?: string[];
  /** input: the MCP server that asks, its message and the JSON schema of what it wants. */
  server?: string;
  message?: string;
  schema?: Record<string, unknown>;
  /**
   * approval: what the tool says the call will do, besides its args (`terminal`: `{ command, cwd }`,
   * the exact command and the absolute folder it runs in).
   */
  detail?: Record<string, unknown>;
  /** When it resolves by itself (`tools.approval_timeout_s`), epoch ms. */
  expires_at?: number;
}

/** `request.resolved` (durable): the one answer a request gets. */
export interface RequestResolvedPayload {
  request_id: string;
  /** approval: once|session|always|deny; input: accept|decline|cancel; client_tool: output|error. */
  choice?: string;
  /** The principal that answered, or `gateway` when nobody did (see `reason`). */
  by: string;
  reason?: ResolutionReason;
  note?: string;
}

/** A request still waiting, as Snapshots and `GET /api/sessions/{id}` show it. */
export interface OpenRequest extends RequestOpenedPayload {
  turn_id: string;
  created_at: number;
}

/** What a second answer learns: the request was already settled, and how. */
export interface RequestResolution {
  request_id: string;
  choice: string | null;
  by: string;
  reason: ResolutionReason | null;
  resolved_at: number;
}

/** `request.respond` answer. */
export interface RequestRespondResult {
  request_id: string;
  status: "resolved";
  choice: string;
  by: string;
}

/** A stored `always` approval of a profile (listed and revocable; never written to the config file). */
export interface StoredApproval {
  tool: string;
  by: string;
  created_at: number;
}

/**
 * A tool the client executes itself (`session.create { client_tools }`, `session.update`; OpenAI
 * function tools on the HTTP API): offered to the model beside the gateway's tools, a call of it
 * opens a request of kind `client_tool` answered with `output` or `error`.
 */
export interface ClientToolSpec {
  name: string;
  description?: string;
  /** JSON schema of the arguments object. */
  parameters?: Record<string, unknown>;
  /** OpenAI's strict schema adherence for the arguments, passed to the model as given. */
  strict?: boolean;
}
