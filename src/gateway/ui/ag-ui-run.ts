/**
 * AG-UI: `POST /ag-ui` and `POST /ag-ui/{profile}` take a `RunAgentInput` and answer the run as
 * AG-UI events (SSE, or protobuf when the client's Accept asks for it: `@ag-ui/encoder`).
 *
 * `threadId` is a Tether session key (session-keys.ts), `runId` names the run: a prompt's turn is
 * started once per run id (the turn's request id), so a second POST of the same run after a dropped
 * connection does not run it twice — it reconnects: the thread's stored messages
 * (MESSAGES_SNAPSHOT), then the turn replayed from where the snapshot leaves off and followed live
 * (ag-ui-events.ts). Tool results and interrupt answers (`resume`) answer the open requests the
 * turn waits on, and the run follows the same turn on. Loaded on the first request (app.ts).
 */
import { EventEncoder } from "@ag-ui/encoder";
import type { BaseEvent } from "@ag-ui/core";
import * as z from "zod";
import { ErrorCode, RequestKind, TetherError, type OpenRequest } from "../../protocol/index.js";
import type { Caller, Profile, SeedMessage, StartedTurn } from "../../sessions/index.js";
import { callerOf, profileOf, PROFILE_HEADER, type AppContext, type HttpApi } from "../http/context.js";
import { HttpError, HttpErrors } from "../http/errors.js";
import { FrameTap } from "../http/frame-tap.js";
import { readJson } from "../http/json-body.js";
import { refuseWhileCallsWait } from "../http/openai-chat.js";
import { agUiMessages, AgUiTranslator, type TetherUiState } from "./ag-ui-events.js";
import { historyParts, historyText, readAgUiInput, type AgUiAsk, type AgUiRequest } from "./ag-ui-input.js";
import { feedStream } from "./feed-stream.js";
import { createForKey, sessionOfKey } from "./session-keys.js";

/** What the run streams: a turn from a seq, and whether it opens with the stored messages. */
interface RunPlan {
  sessionId: string;
  turnId: string;
  afterSeq: number;
  catchUp: boolean;
  reconnect: boolean;
  /** The turn is over (or there is none): the log alone, no tap. */
  over: boolean;
}

export async function runAgUi(c: AppContext, api: HttpApi): Promise<Response> {
  const caller = callerOf(c);
  const req = readAgUiInput(await readJson(c, z.unknown()));
  const profile = await profileOfRun(c);
  const existing = await sessionOfKey(profile, caller, req.input.threadId);
  const tap = new FrameTap();
  let plan: RunPlan;
  try {
    plan = await planRun(api, profile, caller, req, existing, tap);
  } catch (err) {
    tap.close();
    if (existing) await profile.sessions.detach(caller, existing, tap).catch(() => undefined);
    throw err;
  }
  if (plan.over) {
    tap.close();
    await profile.sessions.detach(caller, plan.sessionId, tap).catch(() => undefined);
  }
  const live = plan.over ? null : tap;
  const state = await stateOf(profile, caller, plan.sessionId);
  const snapshot = plan.reconnect ? agUiMessages(await allMessages(profile, caller, plan.sessionId)) : undefined;
  const translator = new AgUiTranslator({ threadId: req.input.threadId, runId: req.input.runId, turnId: plan.turnId, state, ...(snapshot ? { snapshot } : {}) });
  const encoder = new EventEncoder({ accept: c.req.header("accept") ?? "text/event-stream" });
  const encode = (events: BaseEvent[]) => events.map((e) => encoder.encodeBinary(e));
  const sse = encoder.getContentType() === "text/event-stream";
  const stream = feedStream<Uint8Array>(
    c,
    api,
    {
      sessions: profile.sessions,
      caller,
      sessionId: plan.sessionId,
      turnId: plan.turnId,
      afterSeq: plan.afterSeq,
      tap: live,
      catchUp: plan.catchUp,
      stopAtAwaiting: true,
    },
    {
      open: () => encode(translator.open()),
      item: (item) => encode(item.kind === "catchup" ? translator.catchup(item.frames, item.snapshots) : translator.frame(item.frame)),
      close: (how) => encode(translator.close(how)),
    },
    async () => {
      if (live) await profile.sessions.detach(caller, plan.sessionId, live);
    },
    // An SSE comment keeps proxies from closing a quiet run; protobuf framing has no such thing.
    sse ? () => KEEP_ALIVE : undefined,
  );
  return new Response(stream, { status: 200, headers: { "content-type": encoder.getContentType(), "cache-control": "no-cache", "x-accel-buffering": "no" } });
}

const KEEP_ALIVE = new TextEncoder().encode(": keep-alive\n\n");

/** `/ag-ui/{profile}` names the profile in the path; `X-Tether-Profile` or `?profile=` may not name another. */
async function profileOfRun(c: AppContext): Promise<Profile> {
  const inPath = c.req.param("profile");
  const named = c.req.header(PROFILE_HEADER) || c.req.query("profile");
  if (inPath && named && named !== inPath) throw HttpErrors.invalid("profile", `The path names profile "${inPath}", the request "${named}"`);
  return profileOf(c, inPath);
}

async function planRun(api: HttpApi, profile: Profile, caller: Caller, req: AgUiRequest, existing: string | null, tap: FrameTap): Promise<RunPlan> {
  const { input, ask } = req;
  if (ask.kind === "prompt") return startRun(api, profile, caller, req, ask, existing, tap);
  if (!existing) throw new HttpError(404, "session_not_found", `No thread ${input.threadId}: a new thread starts with a user message`, "threadId");
  const snap = await profile.sessions.resume(caller, existing, tap);
  if (req.clientTools.length > 0) await profile.sessions.configure(caller, snap.session_id, { clientTools: req.clientTools });
  const answeredTurn = ask.kind === "answers" ? await answer(profile, caller, snap.session_id, snap.open_requests, ask) : undefined;
  if (answeredTurn) return { sessionId: snap.session_id, turnId: answeredTurn, afterSeq: snap.latest_seq, catchUp: true, reconnect: false, over: false };
  return reconnect(profile, caller, snap.session_id);
}

/** A prompt: the turn of this run id (started once), followed from its start. */
async function startRun(api: HttpApi, profile: Profile, caller: Caller, req: AgUiRequest, ask: Extract<AgUiAsk, { kind: "prompt" }>, existing: string | null, tap: FrameTap): Promise<RunPlan> {
  let sessionId = existing;
  let history: SeedMessage[] = [];
  if (sessionId) {
    await refuseWhileCallsWait(profile, caller, sessionId, "messages", "a tool message");
  } else {
    // A new thread: the conversation the client brought is its history.
    const system = ask.earlier.filter((m) => m.role === "system" || m.role === "developer").map(historyText).join("\n\n");
    history = ask.earlier.flatMap((m, i): SeedMessage[] => {
      const text = historyText(m) ?? "";
      // A user message's media are history too, taken in as a prompt's are.
      const parts = historyParts(m, i);
      if (parts) return [{ role: "user", content: text, parts, parts_at: `messages.${i}.content` }];
      return (m.role === "user" || m.role === "assistant") && text ? [{ role: m.role, content: text }] : [];
    });
    sessionId = await createForKey(profile, caller, req.input.threadId, system ? { system_prompt: system } : {});
  }
  const started: StartedTurn = await profile.sessions.startTurn({
    caller,
    session: { id: sessionId, resume: true },
    ...(history.length > 0 ? { history } : {}),
    // With media every part goes in order, text included: the prompt's text is theirs.
    text: ask.parts ? "" : ask.text,
    ...(ask.parts ? { parts: ask.parts } : {}),
    clientTools: req.clientTools,
    requestId: `ag-ui:${req.input.runId}`,
    viewer: tap,
  });
  if (started.result.status === "duplicate") {
    // The same run again (its connection dropped): a reconnect to its turn.
    const mark = await profile.sessions.turn(caller, started.sessionId, started.result.turn_id);
    return { sessionId: started.sessionId, turnId: started.result.turn_id, afterSeq: mark?.after_seq ?? 0, catchUp: true, reconnect: true, over: !!mark?.complete };
  }
  return { sessionId: started.sessionId, turnId: started.result.turn_id, afterSeq: started.opened?.latestSeq ?? 0, catchUp: false, reconnect: false, over: false };
}

/**
 * Each tool result and interrupt answer to its open request; the turn they belong to, or undefined
 * when none was open (answered already: the same run again, after a dropped connection).
 */
async function answer(profile: Profile, caller: Caller, sessionId: string, open: readonly OpenRequest[], ask: Extract<AgUiAsk, { kind: "answers" }>): Promise<string | undefined> {
  let turnId: string | undefined;
  const respond = async (request: OpenRequest, reply: Record<string, unknown>) => {
    turnId ??= request.turn_id;
    await profile.sessions.respond(caller, sessionId, request.request_id, reply).catch((err: unknown) => {
      if (err instanceof TetherError && (err.code === ErrorCode.RequestResolved || err.code === ErrorCode.RequestNotFound)) return;
      throw err;
    });
  };
  for (const r of ask.resume) {
    const request = open.find((o) => o.request_id === r.interruptId);
    if (!request) continue;
    if (request.kind !== RequestKind.Approval) throw HttpErrors.invalid(`${r.index}.interruptId`, `Interrupt ${r.interruptId} is a ${request.kind} request: answer it with a tool message`);
    await respond(request, approvalOf(r.status, r.payload, r.index));
  }
  for (const t of ask.toolResults) {
    const request = open.find((o) => o.kind === RequestKind.ClientTool && o.call_id === t.callId);
    if (!request) continue;
    await respond(request, t.error ? { error: t.content.slice(0, 100_000) } : { output: t.content });
  }
  return turnId;
}

/**
 * An interrupt's answer as an approval choice: `cancelled` denies; a resolved payload is `true` /
 * `false`, `{ approved, reason? }`, or one of Tether's choices (`once`, `session`, `always`, `deny`).
 */
function approvalOf(status: string, payload: unknown, index: string): Record<string, unknown> {
  if (status === "cancelled") return { choice: "deny" };
  if (payload === true || payload === false) return { choice: payload ? "once" : "deny" };
  if (typeof payload === "string" && ["once", "session", "always", "deny"].includes(payload)) return { choice: payload };
  if (payload && typeof payload === "object" && typeof (payload as { approved?: unknown }).approved === "boolean") {
    const p = payload as { approved: boolean; reason?: unknown };
    return { choice: p.approved ? "once" : "deny", ...(typeof p.reason === "string" ? { note: p.reason.slice(0, 10_000) } : {}) };
  }
  throw HttpErrors.invalid(`${index}.payload`, "an approval's payload is true/false, { approved, reason? }, or once|session|always|deny");
}

/** Nothing new: the thread's latest turn, replayed after its stored messages (over: just its end). */
async function reconnect(profile: Profile, caller: Caller, sessionId: string): Promise<RunPlan> {
  const mark = await profile.sessions.turn(caller, sessionId);
  if (!mark) return { sessionId, turnId: "", afterSeq: 0, catchUp: false, reconnect: true, over: true };
  return { sessionId, turnId: mark.turn_id, afterSeq: mark.after_seq, catchUp: true, reconnect: true, over: !!mark.complete };
}

async function stateOf(profile: Profile, caller: Caller, sessionId: string): Promise<TetherUiState> {
  const { sessions } = profile;
  const [todo, open_requests, processes] = await Promise.all([
    sessions.todo(caller, sessionId).catch(() => ({ revision: 0, items: [] })),
    sessions.openRequests(caller, sessionId),
    sessions.processList(caller, sessionId).then((r) => r.processes, () => []),
  ]);
  return { todo, open_requests, processes };
}

async function allMessages(profile: Profile, caller: Caller, sessionId: string) {
  const out = [];
  let after: string | undefined;
  for (;;) {
    const page = await profile.sessions.messages(caller, sessionId, after, 1000);
    out.push(...page.messages);
    if (!page.next_cursor || page.messages.length === 0) return out;
    after = page.messages.at(-1)!.message_id;
  }
}
