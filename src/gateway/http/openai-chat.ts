/**
 * `POST /v1/chat/completions`, OpenAI-compatible, streaming and not — with OpenAI's function
 * calling: the request's `tools` are the client's own, offered beside the gateway's; a call of one
 * ends the completion with `tool_calls` (chat-answer.ts), and the next request continues the turn.
 *
 * Without `X-Session-Id` the call makes a new hidden session seeded from the request's messages
 * (system/developer → system prompt, earlier messages → transcript exactly as sent, tool calls and
 * results included), and the turn starts with the last user message — or, when the list ends with
 * tool results, the model answers them (a stateless client sends its whole loop back). It is not
 * closed when the response ends: the `X-Session-Id` the answer carries continues it (like any
 * detached session it is reaped after the grace, and resumes by id all the same). With
 * `X-Session-Id` the stored session continues: its history comes from the store; only the last
 * user message is used, or the trailing `role: "tool"` messages, which answer the calls its parked
 * turn waits for (the turn resumes from the store). The id is echoed either way.
 *
 * The session lives in the profile the request names (`X-Tether-Profile` or `?profile=`, default
 * `default`), run with that profile's config (system prompt, tools…). A continued session is looked
 * up in that profile's store only: a session of another profile is 404 `session_not_found`, as on
 * the sessions API. Idempotency records stay in the default profile's store (a key is the
 * principal's, whichever profile it addresses).
 *
 * A client that disconnects before the turn ended interrupts it; the partial assistant message is
 * stored with status `interrupted`.
 */
import type { Routes } from "./lazy-routes.js";
import * as z from "zod";
import { ErrorCode, RequestKind, TetherError } from "../../protocol/index.js";
import type { Caller, Profile, SeedMessage, StartedTurn } from "../../sessions/index.js";
import { callerOf, idempotencyRecords, profileOf, type AppContext, type AppEnv, type HttpApi } from "./context.js";
import { HttpError, HttpErrors } from "./errors.js";
import { FrameTap } from "./frame-tap.js";
import { claimIdempotency, underClaim, type IdempotencyClaim } from "./idempotency.js";
import { readJson, UNKNOWN_PARAMETER } from "./json-body.js";
import { resolveModel } from "./models.js";
import { ChatMessage, ChatStreamOptions } from "./chat-messages.js";
import { checkToolPairs, toChatConversation, type ChatConversation } from "./chat-input.js";
import { chatCallParams, type ChatCallParams } from "./chat-params.js";
import { answerChat, replayChat, SESSION_HEADER, streamChat, type ChatTurn, type StoredChat } from "./chat-answer.js";
import { withTrace } from "./access-log.js";
import { cutAfterResults } from "./cut-continuation.js";

export { SESSION_HEADER } from "./chat-answer.js";

/**
 * The body: every nested object the gateway reads is strict (chat-messages.ts; `tools` and
 * `tool_choice` in chat-params.ts); the top level is checked against the parameter table there.
 */
const ChatBody = z
  .object({
    model: z.string().min(1),
    messages: z.array(ChatMessage).min(1),
    stream: z.boolean().nullable().optional(),
    stream_options: ChatStreamOptions.nullable().optional(),
  })
  .passthrough();
type ChatBody = z.infer<typeof ChatBody>;

export function mountChat(app: Routes, api: HttpApi): void {
  app.post("/v1/chat/completions", async (c) => {
    const caller = callerOf(c);
    const body = await readJson(c, ChatBody, { unknownCode: UNKNOWN_PARAMETER });
    const call = chatCallParams(body);
    const claim = await claimIdempotency(c, idempotencyRecords(api), caller);
    const includeUsage = body.stream_options?.include_usage === true;
    if (claim.kind === "replay") return replayChat(c, api, body.stream === true, includeUsage, claim.body as StoredChat);
    return underClaim(claim, () => startChat(c, api, caller, body, call, claim));
  });
}

async function startChat(c: AppContext, api: HttpApi, caller: Caller, body: ChatBody, call: ChatCallParams, claim: IdempotencyClaim): Promise<Response> {
  const model = resolveModel(api, body.model);
  const chat = toChatConversation(body.messages);
  const continued = c.req.header(SESSION_HEADER);
  // A conversation sent whole must pair every call with its result, as OpenAI's does.
  if (!continued) checkToolPairs(body.messages);
  const profile = await profileOf(c);
  const tap = new FrameTap();
  const created = Math.floor(api.clock.now() / 1000);
  const turn = await (async (): Promise<ChatTurn> => {
    if (continued && chat.toolResults.length > 0) {
      const answering = await answerToolCalls(api, caller, profile, continued, chat, call, tap, claim);
      // "resume": a retry of a continuation a crash cut — a new model call on the stored results.
      if (answering !== "resume") return answering;
    }
    const started = await enterTurn(c, api, caller, profile, model, chat, call, tap, claim);
    const { turn_id: turnId, message_id: steer } = started.result;
    return {
      sid: started.sessionId,
      turnId,
      // Steered into a running turn (busy policy `steer`): this request answers with what the model
      // writes from its message on (turn-follow.ts), under an id of its own.
      ...(started.result.status === "steered" && steer !== undefined ? { steer, id: `chatcmpl-${turnId}-${steer}` } : { id: `chatcmpl-${turnId}` }),
      created,
      // A continued session answers with the model it really uses.
      model: continued ? started.opened!.model : model.id,
    };
  })().catch((err: unknown) => {
    tap.close();
    throw err;
  });
  const { sessions } = profile;
  const stop = async (cancelTurn: string | null) => {
    tap.close();
    if (cancelTurn !== null) await sessions.cancelTurn(caller, turn.sid, cancelTurn).catch(() => undefined);
    await sessions.detach(caller, turn.sid, tap).catch(() => undefined);
  };
  if (!body.stream) return answerChat(c, turn, tap, stop, claim);
  return streamChat(c, api, body.stream_options?.include_usage === true, turn, tap, stop, claim);
}

/**
 * The one way into a turn, for a chat completion: without `X-Session-Id` a hidden one-shot session
 * seeded with the request's earlier messages; with it, that session of the profile resumed
 * (unknown there — another profile's, another principal's — is 404).
 */
async function enterTurn(
  c: AppContext,
  api: HttpApi,
  caller: Caller,
  profile: Profile,
  model: { id: string; provider: string },
  chat: ChatConversation,
  call: ChatCallParams,
  tap: FrameTap,
  claim: IdempotencyClaim,
): Promise<StartedTurn> {
  const continued = c.req.header(SESSION_HEADER);
  const create = {
    provider: model.provider,
    model: model.id,
    // Hidden (out of default listings), but not closed with the response: the id it answers with
    // must continue it.
    hidden: true,
    title: "chat.completions",
    ...(chat.system !== undefined ? { system_prompt: chat.system } : {}),
  };
  if (continued) await refuseWhileCallsWait(profile, caller, continued, "messages", "a tool message");
  // Stateless continuation: the tool results that end the list are history too; the model answers them.
  const results: SeedMessage[] = chat.toolResults.map((r) => ({ role: "tool", content: r.content, tool_call_id: r.callId }));
  try {
    return await profile.sessions.startTurn({
      caller,
      session: continued ? { id: continued, resume: true } : { create },
      ...(continued ? {} : { history: [...chat.seed, ...results] }),
      text: chat.promptParts ? "" : chat.prompt,
      ...(chat.promptParts ? { parts: chat.promptParts } : {}),
      ...(results.length > 0 ? { noInput: true } : {}),
      clientTools: call.clientTools,
      callOptions: call.callOptions,
      ...(claim.kind === "fresh" ? { requestId: `http:${claim.key}` } : {}),
      ...withTrace(c),
      viewer: tap,
    });
  } catch (err) {
    if (continued && err instanceof TetherError && err.code === ErrorCode.NotFound) {
      throw new HttpError(404, "session_not_found", `Session not found in profile "${profile.name}": ${continued}`, "X-Session-Id");
    }
    throw toolErrorOf(err);
  }
}

/**
 * A new prompt for a session whose turn waits for the client's tool results would queue behind a
 * turn that cannot go on: 400 naming the call that waits. (Unknown sessions fall through: the
 * turn entry answers them.)
 */
export async function refuseWhileCallsWait(profile: Profile, caller: Caller, sessionId: string, param: string, what: string): Promise<void> {
  const open = await profile.sessions.openRequests(caller, sessionId).catch(() => []);
  const waiting = open.find((r) => r.kind === RequestKind.ClientTool);
  if (waiting) throw HttpErrors.invalid(param, `Tool call ${waiting.call_id} (${waiting.tool}) is waiting for its result: send ${what} for it before a new prompt`);
}

/** A client tool named like a server tool is a 400 naming the request's tool. */
function toolErrorOf(err: unknown): unknown {
  if (err instanceof TetherError && err.code === ErrorCode.ToolNameTaken) {
    return HttpErrors.invalid(`tools.${String(err.data?.index ?? 0)}.function.name`, err.message);
  }
  return err;
}

/**
 * `X-Session-Id` with trailing tool messages: each answers a client tool call the session's parked
 * turn waits for (the request of kind `client_tool` with that call id), and the completion follows
 * the same turn as it continues. A call id that is not pending is a 400 naming the message; so is
 * a pending call of that turn left unanswered (the turn could not go on without it) — unless the
 * request is a retry (same `Idempotency-Key`) of one whose answer a crash cut (cut-continuation.ts):
 * then "resume", and the caller starts a model call on the stored results.
 */
async function answerToolCalls(
  api: HttpApi,
  caller: Caller,
  profile: Profile,
  sessionId: string,
  chat: ChatConversation,
  call: ChatCallParams,
  tap: FrameTap,
  claim: IdempotencyClaim,
): Promise<ChatTurn | "resume"> {
  const { sessions } = profile;
  const snap = await sessions.resume(caller, sessionId, tap).catch((err: unknown) => {
    if (err instanceof TetherError && err.code === ErrorCode.NotFound) {
      throw new HttpError(404, "session_not_found", `Session not found in profile "${profile.name}": ${sessionId}`, "X-Session-Id");
    }
    throw err;
  });
  const sid = snap.session_id;
  try {
    const pending = snap.open_requests.filter((r) => r.kind === RequestKind.ClientTool);
    // The same request (same key) after a crash cut the model's answer to these results: resume.
    const known = chat.toolResults.every((r) => !pending.some((p) => p.call_id === r.callId));
    if (known && claim.kind === "fresh") {
      // Its results were stored but not yet used: opening the session resumed that turn, which
      // makes the model call again now — this request follows it.
      const mark = snap.running ? await sessions.turn(caller, sid) : null;
      if (mark && mark.complete === undefined) {
        return { sid, turnId: mark.turn_id, id: `chatcmpl-${mark.turn_id}-${snap.latest_seq}`, created: Math.floor(api.clock.now() / 1000), model: snap.model };
      }
      if (!snap.running && (await cutAfterResults(sessions, caller, sid, chat.toolResults))) {
        await sessions.detach(caller, sid, tap).catch(() => undefined);
        return "resume";
      }
    }
    const requests = chat.toolResults.map((r) => {
      const open = pending.find((p) => p.call_id === r.callId);
      if (!open) throw HttpErrors.invalid(`messages.${r.index}.tool_call_id`, `No tool call ${r.callId} is pending in this session`);
      return { result: r, open };
    });
    const turnId = requests[0]!.open.turn_id;
    const answered = new Set(chat.toolResults.map((r) => r.callId));
    const missing = pending.find((p) => p.turn_id === turnId && !answered.has(p.call_id ?? ""));
    if (missing) throw HttpErrors.invalid("messages", `Tool call ${missing.call_id} (${missing.tool}) is waiting for its result too: send a tool message for every call`);
    await sessions.configure(caller, sid, { clientTools: call.clientTools, callOptions: call.callOptions }).catch((err: unknown) => {
      throw toolErrorOf(err);
    });
    for (const { result, open } of requests) {
      await sessions.respond(caller, sid, open.request_id, { output: result.content }).catch((err: unknown) => {
        // Answered meanwhile by someone else (another viewer, a retry): not pending any more.
        if (err instanceof TetherError && (err.code === ErrorCode.RequestResolved || err.code === ErrorCode.RequestNotFound)) {
          throw HttpErrors.invalid(`messages.${result.index}.tool_call_id`, `Tool call ${result.callId} is not pending any more: ${err.message}`);
        }
        throw err;
      });
    }
    return { sid, turnId, id: `chatcmpl-${turnId}-${snap.latest_seq}`, created: Math.floor(api.clock.now() / 1000), model: snap.model };
  } catch (err) {
    await sessions.detach(caller, sid, tap).catch(() => undefined);
    throw err;
  }
}
