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
 * the sessions API. Idempotency records stay in the default profile's store.
 *
 * A client that disconnects before the turn ended interrupts it; the partial assistant message is
 * stored with status `interrupted`.
 */
import type { Hono } from "hono";
import { z } from "zod";
import { ErrorCode, EventType, TetherError, type Frame, type MessageDeltaPayload, type Usage } from "../../protocol/index.js";
import type { Caller, SessionManager } from "../../sessions/index.js";
import { callerOf, clientGone, managerOf, profileOf, type AppContext, type AppEnv, type HttpApi } from "./context.js";
import { HttpError } from "./errors.js";
import { boundToStream, FrameTap } from "./frame-tap.js";
import { claimIdempotency, underClaim, type IdempotencyClaim } from "./idempotency.js";
import { readJson } from "./json-body.js";
import { resolveModel } from "./models.js";
import { ChatMessage, toConversation } from "./openai-input.js";
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
    const claim = await claimIdempotency(c, api.manager, caller);
    if (claim.kind === "replay") return replay(c, api, body, claim.body as StoredChat);
    return underClaim(claim, () => startChat(c, api, caller, body, claim));
  });
}

async function startChat(c: AppContext, api: HttpApi, caller: Caller, body: ChatBody, claim: IdempotencyClaim): Promise<Response> {
  const model = resolveModel(api, body.model);
  const conversation = toConversation(body.messages, "messages");
  const continued = c.req.header(SESSION_HEADER);
  const profile = profileOf(c);
  const sessions = await managerOf(api, profile);
  const tap = new FrameTap();
  let sessionId: string | undefined;
  let modelName = model.id;
  const requestId = claim.kind === "fresh" ? `http:${claim.key}` : undefined;
  let turnId: string;
  try {
    turnId = await api.limiter.admit(caller, async () => {
      if (continued) {
        const snap = await resumeIn(sessions, profile, caller, continued, tap);
        sessionId = snap.session_id;
        modelName = snap.model;
      } else {
        const snap = await sessions.create(
          caller,
          {
            provider: model.provider,
            model: model.id,
            // Hidden (out of default listings), but not closed with the response: the id it
            // answers with must continue it.
            hidden: true,
            title: "chat.completions",
            ...(conversation.system !== undefined ? { system_prompt: conversation.system } : {}),
          },
          tap,
        );
        sessionId = snap.session_id;
        if (conversation.seed.length > 0) await sessions.appendHistory(caller, sessionId, conversation.seed);
      }
      return (await sessions.submit(caller, sessionId, conversation.prompt, requestId)).turn_id;
    });
  } catch (err) {
    tap.close();
    if (sessionId) await sessions.detach(caller, sessionId, tap).catch(() => undefined);
    throw err;
  }
  const sid = sessionId!;
  const created = Math.floor(api.clock.now() / 1000);
  const id = `chatcmpl-${turnId}`;
  const stop = async (cancel: boolean) => {
    tap.close();
    if (cancel) await sessions.cancelTurn(caller, sid, turnId).catch(() => undefined);
    await sessions.detach(caller, sid, tap).catch(() => undefined);
  };
  const completion = (content: string, end: TurnEnd): ChatCompletion => ({
    id,
    object: "chat.completion",
    created,
    model: modelName,
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop", logprobs: null }],
    usage: end.usage ?? ZERO,
  });

  if (!body.stream) {
    const gone = clientGone(c);
    let content = "";
    const end = await followTurn(tap, turnId, gone.signal, (f) => {
      if (f.type === EventType.MessageDelta) content += (f.payload as MessageDeltaPayload).text;
    });
    gone.finish();
    await stop(end.status === "gone");
    if (end.status === "error") throw turnFailure(end.error);
    const result = completion(content, end);
    if (claim.kind === "fresh") await claim.record(200, { session_id: sid, completion: result } satisfies StoredChat);
    return c.json(result, 200, { [SESSION_HEADER]: sid });
  }

  c.header(SESSION_HEADER, sid);
  const includeUsage = body.stream_options?.include_usage === true;
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    JSON.stringify({
      id,
      object: "chat.completion.chunk",
      created,
      model: modelName,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
      ...(includeUsage ? { usage: null } : {}),
    });
  return sseResponse(
    c,
    { clock: api.clock, keepAliveMs: api.config.sse_keepalive_ms, metrics: api.metrics },
    async (sse) => {
      let content = "";
      let end: TurnEnd = { status: "gone" };
      boundToStream(tap, sse, api.flow.hardBytes, () =>
        api.logger.warn({ session_id: sid, turn_id: turnId }, "slow chat-completion reader over the hard limit: ending the stream"),
      );
      try {
        await sse.send(chunk({ role: "assistant", content: "" }, null));
        end = await followTurn(tap, turnId, sse.signal, async (f: Frame) => {
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
        await finishStream(sse, chunk, includeUsage, completion(content, end));
        if (claim.kind === "fresh") await claim.record(200, { session_id: sid, completion: completion(content, end) } satisfies StoredChat);
      } finally {
        if (claim.kind === "fresh") await claim.release().catch(() => undefined);
        await stop(end.status === "gone");
      }
    },
  );
}

/** Resumes `X-Session-Id` in the profile's store; unknown there (another profile's, another principal's) → 404. */
async function resumeIn(sessions: SessionManager, profile: string, caller: Caller, sessionId: string, tap: FrameTap) {
  try {
    return await sessions.resume(caller, sessionId, tap);
  } catch (err) {
    if (err instanceof TetherError && err.code === ErrorCode.NotFound) {
      throw new HttpError(404, "session_not_found", `Session not found in profile "${profile}": ${sessionId}`, "X-Session-Id");
    }
    throw err;
  }
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
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    JSON.stringify({
      id: result.id,
      object: "chat.completion.chunk",
      created: result.created,
      model: result.model,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
      ...(includeUsage ? { usage: null } : {}),
    });
  return sseResponse(c, { clock: api.clock, keepAliveMs: api.config.sse_keepalive_ms, metrics: api.metrics }, async (sse) => {
    await sse.send(chunk({ role: "assistant", content: result.choices[0]!.message.content }, null));
    await finishStream(sse, chunk, includeUsage, result);
  });
}
