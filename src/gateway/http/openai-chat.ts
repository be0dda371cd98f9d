/**
 * `POST /v1/chat/completions`, OpenAI-compatible, streaming and not.
 *
 * Without `X-Session-Id` the call makes a new hidden session seeded from the request's messages
 * (system/developer → system prompt, earlier user/assistant messages → transcript, the last user
 * message → the turn). It is not closed when the response ends: the `X-Session-Id` the answer
 * carries continues it (like any detached session it is reaped after the grace, and resumes by id
 * all the same). With `X-Session-Id` the stored session continues: its history comes from the
 * store, only the last user message of the request is used. The id is echoed either way.
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
import type { Hono } from "hono";
import { z } from "zod";
import { ErrorCode, EventType, TetherError, type Frame, type MessageDeltaPayload, type Usage } from "../../protocol/index.js";
import type { Caller, Profile, StartedTurn } from "../../sessions/index.js";
import { callerOf, clientGone, idempotencyRecords, profileOf, type AppContext, type AppEnv, type HttpApi } from "./context.js";
import { HttpError } from "./errors.js";
import { boundToStream, FrameTap } from "./frame-tap.js";
import { claimIdempotency, underClaim, type IdempotencyClaim } from "./idempotency.js";
import { readJson } from "./json-body.js";
import { resolveModel } from "./models.js";
import { ChatMessage, toConversation, type Conversation } from "./openai-input.js";
import { sseResponse, type SseWriter } from "./sse.js";
import { followTurn, type TurnEnd } from "./turn-follow.js";
import { turnErrorObject, turnFailure } from "./turn-errors.js";

export const SESSION_HEADER = "x-session-id";

const ChatBody = z
  .object({
    model: z.string().min(1),
    messages: z.array(ChatMessage).min(1),
    stream: z.boolean().nullable().optional(),
    stream_options: z.object({ include_usage: z.boolean().optional() }).passthrough().nullable().optional(),
  })
  .passthrough();
type ChatBody = z.infer<typeof ChatBody>;

interface StoredChat {
  session_id: string;
  completion: ChatCompletion;
}

interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: Array<{ index: 0; message: { role: "assistant"; content: string }; finish_reason: string; logprobs: null }>;
  usage: Usage;
}

const ZERO: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

export function mountChat(app: Hono<AppEnv>, api: HttpApi): void {
  app.post("/v1/chat/completions", async (c) => {
    const caller = callerOf(c);
    const body = await readJson(c, ChatBody);
    const claim = await claimIdempotency(c, idempotencyRecords(api), caller);
    if (claim.kind === "replay") return replay(c, api, body, claim.body as StoredChat);
    return underClaim(claim, () => startChat(c, api, caller, body, claim));
  });
}

/** What a started chat completion streams or answers: its session, turn and identity. */
interface ChatTurn {
  sid: string;
  turnId: string;
  id: string;
  created: number;
  model: string;
}

async function startChat(c: AppContext, api: HttpApi, caller: Caller, body: ChatBody, claim: IdempotencyClaim): Promise<Response> {
  const model = resolveModel(api, body.model);
  const conversation = toConversation(body.messages, "messages");
  const profile = await profileOf(c);
  const tap = new FrameTap();
  const started = await enterTurn(c, api, caller, profile, model, conversation, tap, claim).catch((err: unknown) => {
    tap.close();
    throw err;
  });
  const { sessions } = profile;
  const turn: ChatTurn = {
    sid: started.sessionId,
    turnId: started.result.turn_id,
    id: `chatcmpl-${started.result.turn_id}`,
    created: Math.floor(api.clock.now() / 1000),
    // A continued session answers with the model it really uses.
    model: c.req.header(SESSION_HEADER) ? started.opened!.model : model.id,
  };
  const stop = async (cancel: boolean) => {
    tap.close();
    if (cancel) await sessions.cancelTurn(caller, turn.sid, turn.turnId).catch(() => undefined);
    await sessions.detach(caller, turn.sid, tap).catch(() => undefined);
  };
  if (!body.stream) return answerChat(c, turn, tap, stop, claim);
  return streamChat(c, api, body, turn, tap, stop, claim);
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
  conversation: Conversation,
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
    ...(conversation.system !== undefined ? { system_prompt: conversation.system } : {}),
  };
  try {
    return await profile.sessions.startTurn({
      caller,
      session: continued ? { id: continued, resume: true } : { create },
      ...(continued ? {} : { history: conversation.seed }),
      text: conversation.prompt,
      ...(claim.kind === "fresh" ? { requestId: `http:${claim.key}` } : {}),
      viewer: tap,
      admit: (who, run) => api.limiter.admit(who, run),
    });
  } catch (err) {
    if (continued && err instanceof TetherError && err.code === ErrorCode.NotFound) {
      throw new HttpError(404, "session_not_found", `Session not found in profile "${profile.name}": ${continued}`, "X-Session-Id");
    }
    throw err;
  }
}

function completionOf(turn: ChatTurn, content: string, end: TurnEnd): ChatCompletion {
  return {
    id: turn.id,
    object: "chat.completion",
    created: turn.created,
    model: turn.model,
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop", logprobs: null }],
    usage: end.usage ?? ZERO,
  };
}

/** Not streamed: follows the turn to its end, then answers the whole completion. */
async function answerChat(c: AppContext, turn: ChatTurn, tap: FrameTap, stop: (cancel: boolean) => Promise<void>, claim: IdempotencyClaim): Promise<Response> {
  const gone = clientGone(c);
  let content = "";
  const end = await followTurn(tap, turn.turnId, gone.signal, (f) => {
    if (f.type === EventType.MessageDelta) content += (f.payload as MessageDeltaPayload).text;
  });
  gone.finish();
  await stop(end.status === "gone");
  if (end.status === "error") throw turnFailure(end.error);
  const result = completionOf(turn, content, end);
  if (claim.kind === "fresh") await claim.record(200, { session_id: turn.sid, completion: result } satisfies StoredChat);
  return c.json(result, 200, { [SESSION_HEADER]: turn.sid });
}

/** Streamed: one chunk per delta, then the finish chunk (and usage when asked), then `[DONE]`. */
function streamChat(
  c: AppContext,
  api: HttpApi,
  body: ChatBody,
  turn: ChatTurn,
  tap: FrameTap,
  stop: (cancel: boolean) => Promise<void>,
  claim: IdempotencyClaim,
): Response {
  c.header(SESSION_HEADER, turn.sid);
  const includeUsage = body.stream_options?.include_usage === true;
  const chunk = chunkOf(turn, includeUsage);
  return sseResponse(c, { clock: api.clock, keepAliveMs: api.config.sse_keepalive_ms, metrics: api.metrics }, async (sse) => {
    let content = "";
    let end: TurnEnd = { status: "gone" };
    boundToStream(tap, sse, api.flow.hardBytes, () =>
      api.logger.warn({ session_id: turn.sid, turn_id: turn.turnId }, "slow chat-completion reader over the hard limit: ending the stream"),
    );
    try {
      await sse.send(chunk({ role: "assistant", content: "" }, null));
      end = await followTurn(tap, turn.turnId, sse.signal, async (f: Frame) => {
        if (f.type !== EventType.MessageDelta) return;
        const text = (f.payload as MessageDeltaPayload).text;
        content += text;
        await sse.send(chunk({ content: text }, null));
      });
      if (end.status === "gone" || end.status === "closed") return;
      if (end.status === "error") {
        // The same type and code the non-streamed answer would carry.
        await sse.send(JSON.stringify({ error: turnErrorObject(end.error) }));
        return;
      }
      const result = completionOf(turn, content, end);
      await finishStream(sse, chunk, includeUsage, result);
      if (claim.kind === "fresh") await claim.record(200, { session_id: turn.sid, completion: result } satisfies StoredChat);
    } finally {
      if (claim.kind === "fresh") await claim.release().catch(() => undefined);
      await stop(end.status === "gone");
    }
  });
}

/** One `chat.completion.chunk` of this turn. */
function chunkOf(turn: Pick<ChatTurn, "id" | "created" | "model">, includeUsage: boolean) {
  return (delta: Record<string, unknown>, finish: string | null) =>
    JSON.stringify({
      id: turn.id,
      object: "chat.completion.chunk",
      created: turn.created,
      model: turn.model,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
      ...(includeUsage ? { usage: null } : {}),
    });
}

async function finishStream(
  sse: SseWriter,
  chunk: (delta: Record<string, unknown>, finish: string | null) => string,
  includeUsage: boolean,
  result: ChatCompletion,
): Promise<void> {
  await sse.send(chunk({}, result.choices[0]!.finish_reason));
  if (includeUsage) {
    const { id, created, model, usage } = result;
    await sse.send(JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage }));
  }
  await sse.send("[DONE]");
}

/** A replayed Idempotency-Key answers the original completion (as a stream when asked for one). */
function replay(c: AppContext, api: HttpApi, body: ChatBody, stored: StoredChat): Response {
  const result = stored.completion;
  if (!body.stream) return c.json(result, 200, { [SESSION_HEADER]: stored.session_id });
  c.header(SESSION_HEADER, stored.session_id);
  const includeUsage = body.stream_options?.include_usage === true;
  const chunk = chunkOf(result, includeUsage);
  return sseResponse(c, { clock: api.clock, keepAliveMs: api.config.sse_keepalive_ms, metrics: api.metrics }, async (sse) => {
    await sse.send(chunk({ role: "assistant", content: result.choices[0]!.message.content }, null));
    await finishStream(sse, chunk, includeUsage, result);
  });
}
