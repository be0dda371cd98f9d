/**
 * The AI SDK's UI message stream protocol — what `useChat` with `DefaultChatTransport` speaks:
 *
 *   POST /api/chat                { id, messages, trigger, messageId, tools? } → a UI message stream (SSE,
 *                                 `x-vercel-ai-ui-message-stream: v1`) of the turn it starts or continues
 *   GET  /api/chat/{id}/stream    the stream of the session's current turn from its first chunk (useChat's
 *                                 resume), or 204 when there is none
 *
 * `id` is a Tether session key (session-keys.ts). The POST starts a turn through the one turn entry
 * (a prompt; an edit or a regenerate as a new version of that prompt: Tether's branching) or answers
 * what the session's parked turn waits for (client tool outputs, tool approvals) and follows the
 * turn as it goes on. Every stream is the turn's frames translated (ai-sdk-chunks.ts), from the
 * session's durable log and live frames (turn-feed.ts): the turn runs on when the client leaves, and
 * a resume — after a gateway restart, on another node — replays it whole, nothing twice.
 *
 * The current turn of a resume is the session's latest while it runs or waits for an answer, or
 * when the gateway cut it short (its process died or stopped: `interrupted` by `restart` or
 * `shutdown`) — the stream a client lost is then replayed to its end, and the client ends with
 * the stored text. A turn that completed, failed or was stopped is over: 204.
 *
 * The `ai` package (UI message chunks, SSE encoding, headers) is imported on the first request:
 * a gateway nobody asks for it does not load it.
 */
import type { UIMessageChunk } from "ai";
import type { Routes } from "../http/lazy-routes.js";
import { ErrorCode, RequestKind, TetherError, type OpenRequest, type StopReason } from "../../protocol/index.js";
import type { Caller, Profile, SeedMessage, StartedTurn, TurnMark } from "../../sessions/index.js";
import { callerOf, profileOf, type AppContext, type AppEnv, type HttpApi } from "../http/context.js";
import { HttpError, HttpErrors } from "../http/errors.js";
import { FrameTap } from "../http/frame-tap.js";
import { readJson } from "../http/json-body.js";
import { refuseWhileCallsWait } from "../http/openai-chat.js";
import { ChatBody, earlierInput, readChatAsk, type ChatAsk, type ToolAnswer, type UiMessage } from "./ai-sdk-input.js";
import { UiMessageChunker } from "./ai-sdk-chunks.js";
import { feedStream } from "./feed-stream.js";
import { checkKey, createForKey, sessionOfKey } from "./session-keys.js";
import type { TurnFeedSource } from "./turn-feed.js";

/** Stops the gateway made itself: a client may have lost the stream's end to them. */
const GATEWAY_CUTS: ReadonlySet<StopReason> = new Set(["restart", "shutdown"]);

export function mountAiSdkChat(app: Routes, api: HttpApi): void {
  app.post("/api/chat", (c) => postChat(c, api));
  app.get("/api/chat/:id/stream", (c) => resumeChat(c, api));
}

/** Where a stream follows its turn from, and what the client already has. */
interface Follow {
  sessionId: string;
  turnId: string;
  afterSeq: number;
  catchUp: boolean;
  knownCalls?: Map<string, { providerExecuted: boolean }>;
  /** No turn to follow: the stream opens and finishes. */
  idle?: boolean;
}

async function postChat(c: AppContext, api: HttpApi): Promise<Response> {
  const caller = callerOf(c);
  const body = await readJson(c, ChatBody);
  checkKey(body.id, "id");
  const ask = readChatAsk(body);
  const profile = await profileOf(c);
  const existing = await sessionOfKey(profile, caller, body.id);
  const tap = new FrameTap();
  let follow: Follow;
  try {
    follow = await startOrContinue(api, profile, caller, body, ask, existing, tap);
  } catch (err) {
    tap.close();
    if (existing) await profile.sessions.detach(caller, existing, tap).catch(() => undefined);
    throw err;
  }
  if (follow.idle) {
    tap.close();
    await profile.sessions.detach(caller, follow.sessionId, tap).catch(() => undefined);
    return respond(c, api, profile, caller, follow, null);
  }
  return respond(c, api, profile, caller, follow, tap);
}

async function startOrContinue(api: HttpApi, profile: Profile, caller: Caller, body: ChatBody, ask: ChatAsk, existing: string | null, tap: FrameTap): Promise<Follow> {
  if (ask.kind === "answers") return answer(profile, caller, requireSession(existing, body.id), ask, tap);
  let sessionId: string;
  let history: SeedMessage[] | undefined;
  let started: StartedTurn;
  if (ask.kind === "prompt") {
    if (existing) {
      sessionId = existing;
      await refuseWhileCallsWait(profile, caller, existing, "messages", "the tool's output (addToolOutput)");
    } else {
      // A new key: the conversation the client brought is the new session's history.
      const seeded = seedOf(ask.earlier);
      sessionId = await createForKey(profile, caller, body.id, seeded.system !== undefined ? { system_prompt: seeded.system } : {});
      history = seeded.history;
    }
    started = await profile.sessions.startTurn({
      caller,
      session: { id: sessionId, resume: true },
      ...(history && history.length > 0 ? { history } : {}),
      // With attachments every part goes in order, text included: the prompt's text is theirs.
      text: ask.parts ? "" : ask.text,
      ...(ask.parts ? { parts: ask.parts } : {}),
      ...(body.tools ? { clientTools: body.tools } : {}),
      // One turn per user message, across retries of the request and restarts of the gateway.
      requestId: `ai-sdk:${ask.clientMessageId}`,
      viewer: tap,
    });
  } else {
    sessionId = requireSession(existing, body.id);
    const from = await promptToBranch(profile, caller, sessionId, ask);
    started = await profile.sessions.startTurn({
      caller,
      session: { id: sessionId, resume: true },
      text: ask.kind === "edit" && !ask.parts ? ask.text : "",
      ...(ask.kind === "edit" && ask.parts ? { parts: ask.parts } : {}),
      fromMessageId: from,
      ...(body.tools ? { clientTools: body.tools } : {}),
      viewer: tap,
    });
  }
  const turnId = started.result.turn_id;
  if (started.result.status === "duplicate") {
    // A retry of a request whose turn started already: its stream from the start, out of the log.
    const mark = await profile.sessions.turn(caller, started.sessionId, turnId);
    return { sessionId: started.sessionId, turnId, afterSeq: mark?.after_seq ?? 0, catchUp: true };
  }
  return { sessionId: started.sessionId, turnId, afterSeq: started.opened?.latestSeq ?? 0, catchUp: false };
}

function requireSession(existing: string | null, key: string): string {
  if (!existing) throw new HttpError(404, "session_not_found", `No session for chat id ${key}: a new chat starts with a user message`, "id");
  return existing;
}

/** A new key's earlier messages: its history (user files included), and the system prompt its system messages make. */
function seedOf(earlier: readonly UiMessage[]): { history: SeedMessage[]; system?: string } {
  const history: SeedMessage[] = [];
  const system: string[] = [];
  for (const [i, m] of earlier.entries()) {
    const { text, parts } = earlierInput(m, i);
    // A user message's files are history too, taken in as a prompt's are.
    if (parts) history.push({ role: "user", content: text, parts, parts_at: `messages.${i}.parts` });
    else if (text === "") continue;
    else if (m.role === "system") system.push(text);
    else history.push({ role: m.role, content: text });
  }
  return { history, ...(system.length > 0 ? { system: system.join("\n\n") } : {}) };
}

/**
 * The Tether message a regenerate or an edit makes a new version of: the prompt of the assistant
 * message regenerated (its UI id is its turn id), else the user's prompt at the same place.
 */
async function promptToBranch(profile: Profile, caller: Caller, sessionId: string, ask: Extract<ChatAsk, { kind: "edit" | "regenerate" }>): Promise<string> {
  const prompts: Array<{ message_id: string; turn_id?: string }> = [];
  let after: string | undefined;
  for (;;) {
    const page = await profile.sessions.messages(caller, sessionId, after, 1000);
    for (const m of page.messages) if (m.role === "user" && !m.display_kind) prompts.push(m);
    if (!page.next_cursor || page.messages.length === 0) break;
    after = page.messages.at(-1)!.message_id;
  }
  const byTurn = ask.kind === "regenerate" && ask.assistantId ? prompts.find((m) => m.turn_id === ask.assistantId) : undefined;
  const found = byTurn ?? prompts[ask.userOrdinal];
  if (!found) throw HttpErrors.invalid("messages", `The session has no prompt #${ask.userOrdinal + 1} to make a new version of`);
  return found.message_id;
}

/**
 * The client sent the assistant message back with what the turn waits for: each answer goes to its
 * open request (an answer to a request settled already is the message's history: passed over), and
 * the stream follows the turn from here.
 */
async function answer(profile: Profile, caller: Caller, sessionId: string, ask: Extract<ChatAsk, { kind: "answers" }>, tap: FrameTap): Promise<Follow> {
  const { sessions } = profile;
  const snap = await sessions.resume(caller, sessionId, tap);
  const sid = snap.session_id;
  let turnId: string | undefined;
  for (const a of ask.answers) {
    const open = requestFor(snap.open_requests, a);
    if (!open) continue;
    turnId ??= open.turn_id;
    const reply =
      a.kind === "approval"
        ? { choice: a.approved ? "once" : "deny", ...(a.reason !== undefined ? { note: a.reason.slice(0, 10_000) } : {}) }
        : a.kind === "output"
          ? { output: a.output }
          : { error: a.errorText.slice(0, 100_000) };
    await sessions.respond(caller, sid, open.request_id, reply).catch((err: unknown) => {
      // Answered meanwhile from another surface: the message's answer is history now.
      if (err instanceof TetherError && (err.code === ErrorCode.RequestResolved || err.code === ErrorCode.RequestNotFound)) return;
      throw err;
    });
  }
  // Nothing was waiting: the stream of the turn still in flight; none: a stream that only finishes.
  turnId ??= await runningTurn(profile, caller, sid);
  if (!turnId) return { sessionId: sid, turnId: ask.messageId, afterSeq: snap.latest_seq, catchUp: false, idle: true };
  return { sessionId: sid, turnId, afterSeq: snap.latest_seq, catchUp: true, knownCalls: ask.knownCalls };
}

function requestFor(open: readonly OpenRequest[], a: ToolAnswer): OpenRequest | undefined {
  if (a.kind === "approval") return open.find((r) => r.kind === RequestKind.Approval && r.request_id === a.approvalId);
  return open.find((r) => r.kind === RequestKind.ClientTool && r.call_id === a.callId);
}

async function runningTurn(profile: Profile, caller: Caller, sessionId: string): Promise<string | undefined> {
  const mark = await profile.sessions.turn(caller, sessionId);
  return mark && !mark.complete ? mark.turn_id : undefined;
}

async function resumeChat(c: AppContext, api: HttpApi): Promise<Response> {
  const caller = callerOf(c);
  const key = checkKey(c.req.param("id") ?? "", "id");
  const profile = await profileOf(c);
  const sessionId = await sessionOfKey(profile, caller, key);
  const mark = sessionId ? await profile.sessions.turn(caller, sessionId) : null;
  if (!sessionId || !mark || !replayable(mark)) return c.body(null, 204);
  // A turn not over is followed live (resuming the session opens it here or finds its owner node).
  const tap = mark.complete ? null : new FrameTap();
  let sid = sessionId;
  if (tap) {
    try {
      sid = (await profile.sessions.resume(caller, sessionId, tap)).session_id;
    } catch (err) {
      tap.close();
      throw err;
    }
  }
  return respond(c, api, profile, caller, { sessionId: sid, turnId: mark.turn_id, afterSeq: mark.after_seq, catchUp: true }, tap);
}

function replayable(mark: TurnMark): boolean {
  if (!mark.complete) return true;
  return mark.complete.status === "interrupted" && mark.complete.stop_reason !== undefined && GATEWAY_CUTS.has(mark.complete.stop_reason);
}

async function respond(c: AppContext, api: HttpApi, profile: Profile, caller: Caller, follow: Follow, tap: FrameTap | null): Promise<Response> {
  const { createUIMessageStreamResponse } = await import("ai");
  const chunker = new UiMessageChunker({ turnId: follow.turnId, ...(follow.knownCalls ? { knownCalls: follow.knownCalls } : {}) });
  const src: Omit<TurnFeedSource, "signal"> = {
    sessions: profile.sessions,
    caller,
    sessionId: follow.sessionId,
    turnId: follow.turnId,
    afterSeq: follow.afterSeq,
    tap,
    catchUp: follow.catchUp,
    stopAtAwaiting: true,
  };
  const stream = feedStream<UIMessageChunk>(
    c,
    api,
    src,
    {
      open: () => chunker.start(),
      item: (item) => (item.kind === "catchup" ? chunker.catchup(item.frames, item.snapshots) : chunker.frame(item.frame)),
      close: (how) => chunker.end(how),
    },
    async () => {
      if (tap) await profile.sessions.detach(caller, follow.sessionId, tap);
    },
  );
  return createUIMessageStreamResponse({ stream, keepAliveMs: api.config.sse_keepalive_ms });
}
