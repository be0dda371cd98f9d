/**
 * The zod schemas of every method's params, validated on every request. Strict objects: a field a
 * method does not take is refused by name (InvalidParams), never dropped. Server-only: the gateway
 * imports this module directly (protocol/index.ts does not re-export it), so the SDK and the web
 * client, which only need the param TYPES (methods.ts, `MethodMap`), never bundle zod.
 */
import * as z from "zod";
import { Method, type MethodName } from "./methods.js";
import { traceparentProblem, tracestateProblem } from "./trace-context.js";

const sessionId = z.string().min(1).max(200);
/** Every session call may name the profile (its own store) it addresses; default `default`. */
const profile = z.string().min(1).max(100).optional();
const seq = z.number().int().min(0);

/** A W3C Trace Context field checked by `problem` (the reason names what is wrong). */
function traceContextCheck(problem: (value: string) => string | undefined) {
  return (value: string, ctx: z.RefinementCtx) => {
    const reason = problem(value);
    if (reason !== undefined) ctx.addIssue({ code: "custom", message: reason });
  };
}

export const EmptyParams = z.strictObject({}).optional();

/** A tool the client executes itself: OpenAI's function name rules (letters, digits, `_`, `-`; at most 64). */
export const ClientToolParam = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "1-64 letters, digits, _ or -"),
  description: z.string().max(10_000).optional(),
  parameters: z.record(z.string(), z.unknown()).optional(),
  strict: z.boolean().optional(),
});
const clientTools = z.array(ClientToolParam).max(128).optional();

export const SessionCreateParams = z.strictObject({
  client_tools: clientTools,
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

export const SessionResumeParams = z.strictObject({ session_id: sessionId, after_seq: seq.optional(), profile });

export const SessionListParams = z
  .strictObject({
    profile: z.string().optional(),
    limit: z.number().int().min(1).max(500).optional(),
    cursor: z.string().max(500).optional(),
    include_ended: z.boolean().optional(),
    include_hidden: z.boolean().optional(),
    /** Sessions whose title or any message contains it (case-insensitive). */
    query: z.string().min(1).max(200).optional(),
    /** true: only archived sessions; absent or false: only sessions not archived. */
    archived: z.boolean().optional(),
  })
  .optional();

export const SessionMessagesParams = z.strictObject({
  session_id: sessionId,
  profile,
  after_message_id: z.string().max(200).optional(),
  limit: z.number().int().min(1).max(1000).optional(),
});

export const SessionIdParams = z.strictObject({ session_id: sessionId, profile });

export const SessionUpdateParams = z.strictObject({
  session_id: sessionId,
  title: z.string().max(500).optional(),
  client_tools: clientTools,
  archived: z.boolean().optional(),
  /** The session's own system prompt from its next turn on; `""` drops it (the profile's applies again). */
  system_prompt: z.string().max(200_000).optional(),
  profile,
});

/** `prompt.cancel`: a queued prompt is dropped (a running one is interrupted). */
export const PromptCancelParams = z.strictObject({ session_id: sessionId, profile, turn_id: z.string().min(1).max(200) });

/** `prompt.edit`: new text for a prompt still waiting in the queue (`turn_id` as `prompt.submit` answered); it keeps its place. */
export const PromptEditParams = z.strictObject({ session_id: sessionId, profile, turn_id: z.string().min(1).max(200), text: z.string().min(1).max(1_000_000) });

const b64 = z.string().max(100_000_000);
/** One content part as a client sends it (parts.ts, PartInput): exactly one of data, url, sha256. */
export const PartInputParam = z.union([
  z.strictObject({ type: z.literal("text"), text: z.string().max(1_000_000) }),
  z
    .strictObject({
      type: z.enum(["image", "file", "audio"]),
      media_type: z.string().min(1).max(200).optional(),
      filename: z.string().min(1).max(500).optional(),
      data: b64.optional(),
      url: z.string().min(1).max(100_000_000).optional(),
      sha256: z.string().regex(/^[0-9a-f]{64}$/, "64 lower-case hex digits").optional(),
      detail: z.enum(["auto", "low", "high"]).optional(),
    })
    .refine((p) => [p.data, p.url, p.sha256].filter((v) => v !== undefined).length === 1, { message: "exactly one of data, url or sha256" }),
]);
export const PartsParam = z.array(PartInputParam).min(1).max(256);

/**
 * `from_message_id`: a new version of that user message (see Branching): `text` is the edited
 * prompt; without `text`, the same prompt again (regenerate). Without `from_message_id`, `text` is required.
 */
export const PromptSubmitParams = z
  .strictObject({
    session_id: sessionId,
    profile,
    text: z.string().min(1).max(1_000_000).optional(),
    /** Content parts (text, image, file, audio): the prompt's text is `text` and the text parts, joined. */
    parts: PartsParam.optional(),
    request_id: z.string().min(1).max(200).optional(),
    from_message_id: z.string().min(1).max(200).optional(),
    /** Continue: a turn with no user message — the model goes on with its last reply (no text, parts or from_message_id). */
    continue: z.literal(true).optional(),
    /** W3C Trace Context of the caller: the turn continues its trace (trace-context.ts). */
    traceparent: z.string().max(256).superRefine(traceContextCheck(traceparentProblem)).optional(),
    tracestate: z.string().superRefine(traceContextCheck(tracestateProblem)).optional(),
  })
  .refine((p) => p.text !== undefined || p.parts !== undefined || p.from_message_id !== undefined || p.continue === true, {
    message: "Required (only a regenerate, with from_message_id, or a continue may leave it out)",
    path: ["text"],
  })
  // A continue sends no prompt: a text, parts or a branch point with it would be dropped, so they are refused.
  .refine((p) => p.continue === undefined || (p.text === undefined && p.parts === undefined && p.from_message_id === undefined), {
    message: "continue takes no text, parts or from_message_id",
    path: ["continue"],
  })
  // A tracestate belongs to a traceparent (W3C): alone it would be dropped, so it is refused.
  .refine((p) => p.tracestate === undefined || p.traceparent !== undefined, { message: "tracestate needs traceparent", path: ["tracestate"] });

/** `session.branch.select`: show version `message_id` (a user message's id, one of its `versions`). */
export const BranchSelectParams = z.strictObject({ session_id: sessionId, profile, message_id: z.string().min(1).max(200) });

export const SessionSteerParams = z.strictObject({
  session_id: sessionId,
  profile,
  text: z.string().min(1).max(1_000_000),
  /** Steer this turn only: a queued one is 4075 `turn_not_started` (never the turn running ahead of it). */
  turn_id: z.string().min(1).max(200).optional(),
});

/**
 * `include_transient: false` leaves out transient frames (deltas, progress): a catch-up then holds
 * the durable frames and the snapshots, which carry every streamed text — what a reconnecting
 * client needs, at a fraction of the bytes. Default true: every frame still retained.
 */
export const EventsSinceParams = z.strictObject({
  session_id: sessionId,
  after_seq: seq,
  include_transient: z.boolean().optional(),
  profile,
});

export const ConfigSetParams = z.strictObject({
  session_id: sessionId,
  profile,
  key: z.string().min(1).max(200),
  value: z.unknown(),
  confirm: z.boolean().optional(),
});

/**
 * `request.respond`: an approval takes `choice` (once | session | always | deny) and an optional
 * `note`; an input request `content` (or `choice: decline | cancel`); a client tool `output` or
 * `error`. Which fields a request takes is checked against its kind (-32602 names the field).
 */
export const RequestRespondParams = z.strictObject({
  session_id: sessionId,
  profile,
  request_id: z.string().min(1).max(200),
  choice: z.string().min(1).max(50).optional(),
  note: z.string().max(10_000).optional(),
  content: z.record(z.string(), z.unknown()).optional(),
  output: z.unknown().optional(),
  error: z.string().max(100_000).optional(),
});

export const ProfileParams = z.strictObject({ profile }).optional();

/** `workspace.folders`: the profile's workspace roots; with `path` (inside one), its sub-folders. */
export const WorkspaceFoldersParams = z.strictObject({ profile, path: z.string().min(1).max(4096).optional() }).optional();

export const ApprovalsRevokeParams = z.strictObject({ profile, tool: z.string().min(1).max(200) });

/** `bot.chat`: the bot is the profile the call names (its scope). */
export const BotChatParams = z.strictObject({ profile: z.string().min(1).max(100) });

const memberList = z.array(z.string().min(1).max(100)).min(1).max(16);

/** `room.create`: members are profiles, by bot name or profile name. The room lives in `profile`. */
export const RoomCreateParams = z.strictObject({ profile, title: z.string().max(500).optional(), members: memberList });

export const RoomPostParams = z.strictObject({ profile, room_id: sessionId, text: z.string().min(1).max(1_000_000) });

export const RoomMessagesParams = z.strictObject({
  profile,
  room_id: sessionId,
  after_message_id: z.string().max(200).optional(),
  limit: z.number().int().min(1).max(1000).optional(),
});

export const RoomMembersParams = z.strictObject({ profile, room_id: sessionId, members: memberList });

/** `process.kill`: a background process of the session, by id. */
export const ProcessIdParams = z.strictObject({ session_id: sessionId, profile, id: z.string().min(1).max(200) });

/** `process.output`: a page from `after_offset` (bytes; default 0), or only the last `tail` bytes. */
export const ProcessOutputParams = z
  .strictObject({
    session_id: sessionId,
    profile,
    id: z.string().min(1).max(200),
    after_offset: z.number().int().min(0).optional(),
    tail: z.number().int().min(1).max(65_536).optional(),
  })
  .refine((p) => p.after_offset === undefined || p.tail === undefined, { message: "give after_offset or tail, not both", path: ["tail"] });

/** Parameter schema of every method (the `satisfies` makes a method without one a type error). */
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
  [Method.SessionDelete]: SessionIdParams,
  [Method.PromptCancel]: PromptCancelParams,
  [Method.PromptEdit]: PromptEditParams,
  [Method.SessionInterrupt]: SessionIdParams,
  [Method.PromptSubmit]: PromptSubmitParams,
  [Method.SessionBranchSelect]: BranchSelectParams,
  [Method.SessionSteer]: SessionSteerParams,
  [Method.EventsSince]: EventsSinceParams,
  [Method.EventsStats]: EmptyParams,
  [Method.ConfigSet]: ConfigSetParams,
  [Method.TodoGet]: SessionIdParams,
  [Method.DelegationList]: SessionIdParams,
  [Method.RequestRespond]: RequestRespondParams,
  [Method.ApprovalsList]: ProfileParams,
  [Method.ApprovalsRevoke]: ApprovalsRevokeParams,
  [Method.WorkspaceFolders]: WorkspaceFoldersParams,
  [Method.ProcessList]: SessionIdParams,
  [Method.ProcessKill]: ProcessIdParams,
  [Method.ProcessOutput]: ProcessOutputParams,
  [Method.BotChat]: BotChatParams,
  [Method.RoomCreate]: RoomCreateParams,
  [Method.RoomPost]: RoomPostParams,
  [Method.RoomMessages]: RoomMessagesParams,
  [Method.RoomMembersAdd]: RoomMembersParams,
  [Method.RoomMembersRemove]: RoomMembersParams,
  [Method.AgentOutbox]: SessionIdParams,
} as const satisfies Record<MethodName, z.ZodType>;
