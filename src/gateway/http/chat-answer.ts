/**
 * A chat completion as the client reads it: the whole object at the turn's end, or the stream of
 * `chat.completion.chunk`s as the turn goes. A turn that waits for the client's own tools ends the
 * completion with the assistant's `tool_calls` and `finish_reason: "tool_calls"` (streamed as
 * `delta.tool_calls` chunks: one naming each call with its index and id, one with its arguments).
 */
import { EventType, type Frame, type MessageDeltaPayload, type Usage } from "../../protocol/index.js";
import type { AppContext, HttpApi } from "./context.js";
import { clientGone } from "./context.js";
import { boundToStream, type FrameTap } from "./frame-tap.js";
import type { IdempotencyClaim } from "./idempotency.js";
import { sseResponse, type SseWriter } from "./sse.js";
import { followTurn, type FollowFrom, type TurnEnd } from "./turn-follow.js";
import { SESSION_MOVED, turnErrorObject, turnFailure } from "./turn-errors.js";
import { ClientCalls, type ChatToolCall } from "./chat-tool-calls.js";

export const SESSION_HEADER = "x-session-id";

/** What a started (or continued) chat completion streams or answers: its session, turn and identity. */
export interface ChatTurn {
  sid: string;
  turnId: string;
  /** The busy policy `steer` joined this request's message to the running turn `turnId`: its message id (turn-follow.ts). */
  steer?: string;
  id: string;
  created: number;
  model: string;
}

export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: Array<{
    index: 0;
    message: { role: "assistant"; content: string | null; tool_calls?: ChatToolCall[] };
    finish_reason: string;
    logprobs: null;
  }>;
  usage: Usage;
}

/** What an `Idempotency-Key` record of a chat completion keeps. */
export interface StoredChat {
  session_id: string;
  completion: ChatCompletion;
}

/** Ends the request's hold on the turn: closes the tap, cancels `cancelTurn` when given (the client left while it answered), detaches. */
export type StopFollowing = (cancelTurn: string | null) => Promise<void>;

/** The turn a completion cancels when its client leaves: the one answering it, once its text joined one. */
function abandoned(end: TurnEnd): string | null {
  return end.status === "gone" ? end.turnId : null;
}

const ZERO: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

function completionOf(turn: ChatTurn, content: string, end: TurnEnd, calls: ClientCalls): ChatCompletion {
  const toolCalls = end.status === "tool_calls";
  const message: ChatCompletion["choices"][0]["message"] = { role: "assistant", content: toolCalls ? content || null : content };
  if (toolCalls) message.tool_calls = calls.calls;
  return {
    id: turn.id,
    object: "chat.completion",
    created: turn.created,
    model: turn.model,
    choices: [{ index: 0, message, finish_reason: toolCalls ? "tool_calls" : "stop", logprobs: null }],
    usage: toolCalls ? calls.usage : (end.usage ?? ZERO),
  };
}

/** Not streamed: follows the turn to its end (or to its client tool calls), then answers the whole completion. */
export async function answerChat(c: AppContext, turn: ChatTurn, tap: FrameTap, stop: StopFollowing, claim: IdempotencyClaim): Promise<Response> {
  const gone = clientGone(c);
  let content = "";
  const calls = new ClientCalls();
  const end = await followTurn(
    tap,
    followFrom(turn),
    gone.signal,
    (f) => {
      if (f.type === EventType.MessageDelta) content += (f.payload as MessageDeltaPayload).text;
      calls.push(f);
    },
    (f) => calls.awaitsClient(f),
  );
  gone.finish();
  await stop(abandoned(end));
  if (end.status === "error") throw turnFailure(end.error);
  if (end.status === "moved") throw turnFailure(SESSION_MOVED);
  const result = completionOf(turn, content, end, calls);
  if (claim.kind === "fresh") await claim.record(200, { session_id: turn.sid, completion: result } satisfies StoredChat);
  return c.json(result, 200, { [SESSION_HEADER]: turn.sid });
}

type Chunk = (delta: Record<string, unknown>, finish: string | null) => string;

/** Streamed: one chunk per delta and per client tool call, then the finish chunk (and usage when asked), then `[DONE]`. */
export function streamChat(
  c: AppContext,
  api: HttpApi,
  includeUsage: boolean,
  turn: ChatTurn,
  tap: FrameTap,
  stop: StopFollowing,
  claim: IdempotencyClaim,
): Response {
  c.header(SESSION_HEADER, turn.sid);
  const chunk = chunkOf(turn, includeUsage);
  const textChunk = textChunkOf(chunk);
  return sseResponse(c, { clock: api.clock, keepAliveMs: api.config.sse_keepalive_ms, metrics: api.metrics }, async (sse) => {
    let content = "";
    let end: TurnEnd = { status: "gone", turnId: null };
    const calls = new ClientCalls();
    boundToStream(tap, sse, api.flow.hardBytes, () =>
      api.logger.warn({ session_id: turn.sid, turn_id: turn.turnId }, "slow chat-completion reader over the hard limit: ending the stream"),
    );
    try {
      await sse.send(chunk({ role: "assistant", content: "" }, null));
      end = await followTurn(
        tap,
        followFrom(turn),
        sse.signal,
        async (f: Frame) => {
          const call = calls.push(f);
          if (call) return sendToolCall(sse, chunk, calls.calls.length - 1, call);
          if (f.type !== EventType.MessageDelta) return;
          const text = (f.payload as MessageDeltaPayload).text;
          content += text;
          await sse.send(textChunk(text));
        },
        (f) => calls.awaitsClient(f),
      );
      if (end.status === "gone" || end.status === "closed") return;
      if (end.status === "error" || end.status === "moved") {
        // The same type and code the non-streamed answer would carry.
        await sse.send(JSON.stringify({ error: turnErrorObject(end.status === "moved" ? SESSION_MOVED : end.error) }));
        return;
      }
      const result = completionOf(turn, content, end, calls);
      await finishStream(sse, chunk, includeUsage, result);
      if (claim.kind === "fresh") await claim.record(200, { session_id: turn.sid, completion: result } satisfies StoredChat);
      // The client has it all (and a retry with its key finds the record): detaching is ours.
      sse.end();
    } finally {
      if (claim.kind === "fresh") await claim.release().catch(() => undefined);
      await stop(abandoned(end));
    }
  });
}

function followFrom(turn: ChatTurn): FollowFrom {
  return turn.steer !== undefined ? { turnId: turn.turnId, steer: turn.steer } : { turnId: turn.turnId };
}

/** OpenAI's shape: the first chunk of a call names it (index, id, name), the next carries its arguments. */
async function sendToolCall(sse: SseWriter, chunk: Chunk, index: number, call: ChatToolCall): Promise<void> {
  await sse.send(chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }] }, null));
  await sse.send(chunk({ tool_calls: [{ index, function: { arguments: call.function.arguments } }] }, null));
}

/** One `chat.completion.chunk` of this turn. */
function chunkOf(turn: Pick<ChatTurn, "id" | "created" | "model">, includeUsage: boolean): Chunk {
  return (delta, finish) =>
    JSON.stringify({
      id: turn.id,
      object: "chat.completion.chunk",
      created: turn.created,
      model: turn.model,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
      ...(includeUsage ? { usage: null } : {}),
    });
}

/**
 * `chunk({ content: text }, null)` for every delta of the stream, as the same bytes: the text's
 * JSON between a prefix and suffix made once, not a chunk object built and stringified per delta.
 */
function textChunkOf(chunk: Chunk): (text: string) => string {
  const probe = chunk({ content: "" }, null);
  // The delta follows the id and model (escaped JSON strings) and precedes only nulls.
  const at = probe.lastIndexOf('"content":""') + '"content":'.length;
  const prefix = probe.slice(0, at);
  const suffix = probe.slice(at + 2);
  return (text) => prefix + JSON.stringify(text) + suffix;
}

async function finishStream(sse: SseWriter, chunk: Chunk, includeUsage: boolean, result: ChatCompletion): Promise<void> {
  await sse.send(chunk({}, result.choices[0]!.finish_reason));
  if (includeUsage) {
    const { id, created, model, usage } = result;
    await sse.send(JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage }));
  }
  await sse.send("[DONE]");
}

/** A replayed Idempotency-Key answers the original completion (as a stream when asked for one). */
export function replayChat(c: AppContext, api: HttpApi, stream: boolean, includeUsage: boolean, stored: StoredChat): Response {
  const result = stored.completion;
  if (!stream) return c.json(result, 200, { [SESSION_HEADER]: stored.session_id });
  c.header(SESSION_HEADER, stored.session_id);
  const chunk = chunkOf(result, includeUsage);
  return sseResponse(c, { clock: api.clock, keepAliveMs: api.config.sse_keepalive_ms, metrics: api.metrics }, async (sse) => {
    const message = result.choices[0]!.message;
    await sse.send(chunk({ role: "assistant", content: message.content ?? "" }, null));
    for (const [i, call] of (message.tool_calls ?? []).entries()) await sendToolCall(sse, chunk, i, call);
    await finishStream(sse, chunk, includeUsage, result);
  });
}
