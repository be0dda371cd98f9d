/**
 * JSON-RPC methods: names, parameter and result types. `MethodMap` gives the SDK a typed `call()`.
 *
 * Plain constants and types only: the zod schemas that validate params live in method-params.ts,
 * which only the gateway imports — so the SDK and the web client never bundle zod (the type-only
 * imports below are erased). test/unit/web-imports.test.ts keeps it that way.
 */
import type * as z from "zod";
import type { Frame } from "./events.js";
import type {
  ApprovalsRevokeParams,
  WorkspaceFoldersParams,
  ConfigSetParams,
  EmptyParams,
  ProfileParams,
  RequestRespondParams,
  EventsSinceParams,
  PromptSubmitParams,
  BranchSelectParams,
  SessionSteerParams,
  SessionCreateParams,
  PromptCancelParams,
  PromptEditParams,
  SessionIdParams,
  SessionListParams,
  SessionMessagesParams,
  SessionResumeParams,
  SessionUpdateParams,
  BotChatParams,
  RoomCreateParams,
  RoomPostParams,
  RoomMessagesParams,
  RoomMembersParams,
  ProcessIdParams,
  ProcessOutputParams,
} from "./method-params.js";
import type { ProcessInfo, ProcessOutputPage } from "./processes.js";
import type { ActiveTurn, BotInfo, DelegationSummary, EnvelopeSummary, Message, MessageSnapshot, RoomInfo, RoomPostResult, SessionSummary, Snapshot, TodoState } from "./types.js";
import type { RequestRespondResult, StoredApproval } from "./requests.js";

export const PROTOCOL_VERSION = 1;

export const Method = {
  Ping: "ping",
  GatewayInfo: "gateway.info",
  SessionCreate: "session.create",
  SessionResume: "session.resume",
  SessionList: "session.list",
  SessionMessages: "session.messages",
  SessionClose: "session.close",
  SessionReopen: "session.reopen",
  SessionDetach: "session.detach",
  SessionUpdate: "session.update",
  SessionDelete: "session.delete",
  PromptCancel: "prompt.cancel",
  PromptEdit: "prompt.edit",
  SessionInterrupt: "session.interrupt",
  PromptSubmit: "prompt.submit",
  SessionBranchSelect: "session.branch.select",
  SessionSteer: "session.steer",
  EventsSince: "session.events.since",
  EventsStats: "session.events.stats",
  ConfigSet: "config.set",
  TodoGet: "todo.get",
  DelegationList: "delegation.list",
  RequestRespond: "request.respond",
  ApprovalsList: "approvals.list",
  ApprovalsRevoke: "approvals.revoke",
  WorkspaceFolders: "workspace.folders",
  ProcessList: "process.list",
  ProcessKill: "process.kill",
  ProcessOutput: "process.output",
  BotChat: "bot.chat",
  RoomCreate: "room.create",
  RoomPost: "room.post",
  RoomMessages: "room.messages",
  RoomMembersAdd: "room.members.add",
  RoomMembersRemove: "room.members.remove",
  AgentOutbox: "agent.outbox",
} as const;

export type MethodName = (typeof Method)[keyof typeof Method];

/** `workspace.folders`: what a folder picker offers (only folders inside the operator's roots). */
export interface WorkspaceFoldersResult {
  /** The profile's workspace roots that exist (real paths); empty when it has no workspace tools. */
  roots: string[];
  /** The folder listed (real path), or null when no `path` was asked. */
  path: string | null;
  /** Its sub-folders' names (hidden ones and symlinks left out), sorted. */
  folders: string[];
  /** More than 500: the rest were left out. */
  truncated: boolean;
}

export interface PingResult {
  pong: true;
  epoch: string;
  server_time: number;
}

export interface GatewayInfoResult {
  name: string;
  version: string;
  protocol: number;
  epoch: string;
  capabilities: string[];
}

export interface SinceResult {
  events: Frame[];
  latest_seq: number;
  truncated: boolean;
  epoch: string;
  snapshots: MessageSnapshot[];
}

export interface StatsResult {
  sessions: number;
  ring_frames: number;
  ring_bytes: number;
  active_turns: ActiveTurn[];
}

export interface SubmitResult {
  turn_id: string;
  trace_id: string;
  /** `steered`: busy policy `steer` — the text joined the running turn `turn_id` (see session.steer). */
  status: "started" | "queued" | "duplicate" | "steered";
  /** `steered`: the id of the user message the text becomes (its `turn.steered`, or the first message of a turn of its own). */
  message_id?: string;
  /** Present when the id submitted to was rotated by compression: the live tip that took the prompt. */
  session_id?: string;
  resolved_from?: string;
}

/** `session.branch.select`: the version shown now, and every version of its group. */
export interface BranchSelectResult {
  message_id: string;
  versions: string[];
  /** `unchanged` when that version was already the one shown (no event). */
  status: "switched" | "unchanged";
  /** The seq of the `branch.switched` frame (absent when unchanged). */
  seq?: number;
}

/**
 * `session.steer`: `steered` — the text joins the running turn `turn_id` before its next model
 * call; otherwise no turn was running and it started (or queued) one as `prompt.submit` would.
 */
export interface SteerResult {
  status: "steered" | "started" | "queued";
  turn_id: string;
  trace_id: string;
  /** `steered`: the id of the user message the text becomes (see SubmitResult). */
  message_id?: string;
  /** Present when the id was rotated by compression: the live tip that took the text. */
  session_id?: string;
  resolved_from?: string;
}

export interface MethodMap {
  "ping": { params: z.input<typeof EmptyParams>; result: PingResult };
  "gateway.info": { params: z.input<typeof EmptyParams>; result: GatewayInfoResult };
  "session.create": { params: z.input<typeof SessionCreateParams> | undefined; result: Snapshot };
  "session.resume": { params: z.input<typeof SessionResumeParams>; result: Snapshot };
  "session.list": {
    params: z.input<typeof SessionListParams>;
    result: { sessions: SessionSummary[]; next_cursor: string | null };
  };
  "session.messages": {
    params: z.input<typeof SessionMessagesParams>;
    result: { messages: Message[]; next_cursor: string | null };
  };
  "session.close": { params: z.input<typeof SessionIdParams>; result: { closed: true; end_reason: string } };
  "session.reopen": { params: z.input<typeof SessionIdParams>; result: Snapshot };
  "session.detach": { params: z.input<typeof SessionIdParams>; result: { detached: boolean } };
  "session.update": { params: z.input<typeof SessionUpdateParams>; result: SessionSummary };
  "session.delete": { params: z.input<typeof SessionIdParams>; result: { deleted: true } };
  "prompt.cancel": { params: z.input<typeof PromptCancelParams>; result: { status: "dequeued" | "interrupted" | "idle" } };
  "prompt.edit": { params: z.input<typeof PromptEditParams>; result: { status: "edited" | "started" | "idle" } };
  "session.interrupt": {
    params: z.input<typeof SessionIdParams>;
    result: { status: "interrupted" | "idle" };
  };
  "prompt.submit": { params: z.input<typeof PromptSubmitParams>; result: SubmitResult };
  "session.branch.select": { params: z.input<typeof BranchSelectParams>; result: BranchSelectResult };
  "session.steer": { params: z.input<typeof SessionSteerParams>; result: SteerResult };
  "session.events.since": { params: z.input<typeof EventsSinceParams>; result: SinceResult };
  "session.events.stats": { params: z.input<typeof EmptyParams>; result: StatsResult };
  "config.set": {
    params: z.input<typeof ConfigSetParams>;
    result: { status: "applied" | "pending" | "confirm_required"; confirm_message?: string };
  };
  "todo.get": { params: z.input<typeof SessionIdParams>; result: TodoState };
  "delegation.list": { params: z.input<typeof SessionIdParams>; result: { delegations: DelegationSummary[] } };
  "request.respond": { params: z.input<typeof RequestRespondParams>; result: RequestRespondResult };
  "workspace.folders": { params: z.input<typeof WorkspaceFoldersParams>; result: WorkspaceFoldersResult };
  "approvals.list": { params: z.input<typeof ProfileParams>; result: { approvals: StoredApproval[] } };
  "approvals.revoke": { params: z.input<typeof ApprovalsRevokeParams>; result: { revoked: boolean } };
  "process.list": { params: z.input<typeof SessionIdParams>; result: { processes: ProcessInfo[] } };
  "process.kill": { params: z.input<typeof ProcessIdParams>; result: { process: ProcessInfo } };
  "process.output": { params: z.input<typeof ProcessOutputParams>; result: ProcessOutputPage };
  "bot.chat": { params: z.input<typeof BotChatParams>; result: Snapshot & { bot: BotInfo; created: boolean } };
  "room.create": { params: z.input<typeof RoomCreateParams>; result: RoomInfo };
  "room.post": { params: z.input<typeof RoomPostParams>; result: RoomPostResult };
  "room.messages": { params: z.input<typeof RoomMessagesParams>; result: { messages: Message[]; next_cursor: string | null } };
  "room.members.add": { params: z.input<typeof RoomMembersParams>; result: RoomInfo };
  "room.members.remove": { params: z.input<typeof RoomMembersParams>; result: RoomInfo };
  "agent.outbox": { params: z.input<typeof SessionIdParams>; result: { envelopes: EnvelopeSummary[] } };
}

const METHOD_NAMES: ReadonlySet<string> = new Set<string>(Object.values(Method));

/** A method of this protocol (anything else is -32601). METHOD_PARAMS has a schema for each. */
export function isKnownMethod(name: string): name is MethodName {
  return METHOD_NAMES.has(name);
}
