/**
 * JSON-RPC methods: names, parameter schemas (validated on every request) and result types.
 * `MethodMap` gives the SDK a typed `call()`.
 */
import { z } from "zod";
import type { Frame } from "./events.js";
import type { ActiveTurn, DelegationSummary, Message, MessageSnapshot, SessionSummary, Snapshot, TodoState } from "./types.js";

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
  SessionInterrupt: "session.interrupt",
  PromptSubmit: "prompt.submit",
  EventsSince: "session.events.since",
  EventsStats: "session.events.stats",
  ConfigSet: "config.set",
  TodoGet: "todo.get",
  DelegationList: "delegation.list",
} as const;

export type MethodName = (typeof Method)[keyof typeof Method];

const sessionId = z.string().min(1).max(200);
/** Every session call may name the profile (its own store) it addresses; default `default`. */
const profile = z.string().min(1).max(100).optional();
const seq = z.number().int().min(0);

export const EmptyParams = z.object({}).optional();

export const SessionCreateParams = z.object({
  profile: z.string().min(1).max(100).optional(),
  title: z.string().max(500).optional(),
  model: z.string().min(1).max(200).optional(),
  provider: z.string().min(1).max(100).optional(),
  system_prompt: z.string().max(200_000).optional(),
  cwd: z.string().max(4096).optional(),
  hidden: z.boolean().optional(),
  follow_profile_config: z.boolean().optional(),
  room_plumbing: z.boolean().optional(),
  close_on_disconnect: z.boolean().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  /** A delegation result delivered to this session starts a turn (push-style bots). Default false. */
  wake_on_delivery: z.boolean().optional(),
});

export const SessionResumeParams = z.object({ session_id: sessionId, after_seq: seq.optional(), profile });

export const SessionListParams = z
  .object({
    profile: z.string().optional(),
    limit: z.number().int().min(1).max(500).optional(),
    cursor: z.string().max(500).optional(),
    include_ended: z.boolean().optional(),
    include_hidden: z.boolean().optional(),
  })
  .optional();

export const SessionMessagesParams = z.object({
  session_id: sessionId,
  profile,
  after_message_id: z.string().max(200).optional(),
  limit: z.number().int().min(1).max(1000).optional(),
});

export const SessionIdParams = z.object({ session_id: sessionId, profile });

export const SessionUpdateParams = z.object({ session_id: sessionId, title: z.string().max(500).optional(), profile });

export const PromptSubmitParams = z.object({
  session_id: sessionId,
  profile,
  text: z.string().min(1).max(1_000_000),
  request_id: z.string().min(1).max(200).optional(),
});

/**
 * `include_transient: false` leaves out transient frames (deltas, progress): a catch-up then holds
 * the durable frames and the snapshots, which carry every streamed text — what a reconnecting
 * client needs, at a fraction of the bytes. Default true: every frame still retained.
 */
export const EventsSinceParams = z.object({
  session_id: sessionId,
  after_seq: seq,
  include_transient: z.boolean().optional(),
  profile,
});

export const ConfigSetParams = z.object({
  session_id: sessionId,
  profile,
  key: z.string().min(1).max(200),
  value: z.unknown(),
  confirm: z.boolean().optional(),
});

/** Parameter schema of every method; a method missing here is unknown (-32601). */
export const METHOD_PARAMS = {
  [Method.Ping]: EmptyParams,
  [Method.GatewayInfo]: EmptyParams,
  [Method.SessionCreate]: SessionCreateParams.optional(),
  [Method.SessionResume]: SessionResumeParams,
  [Method.SessionList]: SessionListParams,
  [Method.SessionMessages]: SessionMessagesParams,
  [Method.SessionClose]: SessionIdParams,
  [Method.SessionReopen]: SessionIdParams,
  [Method.SessionDetach]: SessionIdParams,
  [Method.SessionUpdate]: SessionUpdateParams,
  [Method.SessionInterrupt]: SessionIdParams,
  [Method.PromptSubmit]: PromptSubmitParams,
  [Method.EventsSince]: EventsSinceParams,
  [Method.EventsStats]: EmptyParams,
  [Method.ConfigSet]: ConfigSetParams,
  [Method.TodoGet]: SessionIdParams,
  [Method.DelegationList]: SessionIdParams,
} as const satisfies Record<MethodName, z.ZodType>;

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
  status: "started" | "queued" | "duplicate";
  /** Present when the id submitted to was rotated by compression: the live tip that took the prompt. */
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
  "session.interrupt": {
    params: z.input<typeof SessionIdParams>;
    result: { status: "interrupted" | "idle" };
  };
  "prompt.submit": { params: z.input<typeof PromptSubmitParams>; result: SubmitResult };
  "session.events.since": { params: z.input<typeof EventsSinceParams>; result: SinceResult };
  "session.events.stats": { params: z.input<typeof EmptyParams>; result: StatsResult };
  "config.set": {
    params: z.input<typeof ConfigSetParams>;
    result: { status: "applied" | "pending" | "confirm_required"; confirm_message?: string };
  };
  "todo.get": { params: z.input<typeof SessionIdParams>; result: TodoState };
  "delegation.list": { params: z.input<typeof SessionIdParams>; result: { delegations: DelegationSummary[] } };
}

export function isKnownMethod(name: string): name is MethodName {
  return Object.prototype.hasOwnProperty.call(METHOD_PARAMS, name);
}
