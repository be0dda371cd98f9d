/**
 * `POST /v1/runs`: which session a run goes to, and the turn that is the run.
 *
 * The session is chosen in this order: the body's `session_id`, the session of
 * `previous_response_id`, the session of the `X-Session-Key` (the first run with a key creates
 * it and binds the key), a new session. An addressed id is resolved to its live tip (the way into
 * a turn resumes the tip, and submits there), so a run after compression loads its history from
 * the continuation and writes there, never into the closed parent.
 */
import * as z from "zod";
import type { TraceParent } from "../../protocol/index.js";
import type { Caller, Profile, RunRecord, StartedTurn } from "../../sessions/index.js";
import type { HttpApi } from "./context.js";
import { HttpError, HttpErrors } from "./errors.js";
import { resolveModel } from "./models.js";
import { InputItem, toConversation, type Conversation } from "./openai-input.js";

export const SESSION_KEY_HEADER = "x-session-key";

export const RunsBody = z
  .object({
    input: z.union([z.string().min(1), z.array(InputItem).min(1)]),
    session_id: z.string().min(1).max(200).optional(),
    instructions: z.string().max(1_000_000).nullable().optional(),
    previous_response_id: z.string().min(1).max(200).nullable().optional(),
    model: z.string().min(1).optional(),
    tools: z.array(z.unknown()).nullable().optional(),
  })
  .strict();
export type RunsBody = z.infer<typeof RunsBody>;

/** Where the run goes: an existing session (by id, resolved to its tip) or a new one. */
type Target = { id: string } | { create: true };

export interface RunStart {
  caller: Caller;
  profile: Profile;
  body: RunsBody;
  sessionKey: string | undefined;
  /** One turn per key, across retries and restarts (the `Idempotency-Key`). */
  requestId: string | undefined;
  /** The caller's span (`traceparent` header): the run's turn continues its trace. */
  trace?: TraceParent | undefined;
}

/** Chooses the session, starts the turn, records the run. */
export async function startRun(api: HttpApi, s: RunStart): Promise<RunRecord> {
  const { caller, profile, body } = s;
  if (body.tools && body.tools.length > 0) {
    throw HttpErrors.invalid("tools", "tools are not supported on /v1/runs: a run uses the tools of its session's profile");
  }
  const model = body.model !== undefined ? resolveModel(api, body.model) : undefined;
  const items = typeof body.input === "string" ? [{ role: "user" as const, content: body.input }] : body.input;
  const conversation = toConversation(items, "input", body.instructions ?? undefined);
  let target = await chooseSession(s);
  if ("create" in target && s.sessionKey !== undefined) target = await createForKey(s, conversation, model);
  if ("id" in target && body.instructions) {
    throw HttpErrors.invalid("instructions", `instructions set the system prompt of a new session; this run continues session ${target.id}`);
  }
  if ("id" in target && model) await switchModel(s, target.id, model);
  const turn = await profile.sessions.startTurn({
    caller,
    session: "id" in target ? { id: target.id, resume: true } : { create: createParams(conversation, model) },
    history: conversation.seed,
    text: conversation.prompt,
    ...(s.requestId !== undefined ? { requestId: s.requestId } : {}),
    ...(s.trace ? { trace: s.trace } : {}),
  });
  return recordRun(s, turn);
}

/** The body's session, the previous response's, the key's; else a new one. */
async function chooseSession({ caller, profile, body, sessionKey }: RunStart): Promise<Target> {
  if (body.session_id) return { id: body.session_id };
  if (body.previous_response_id) {
    const previous = await profile.records.response(caller, body.previous_response_id);
    if (!previous) throw HttpErrors.responseNotFound(body.previous_response_id, "previous_response_id");
    return { id: previous.session_id };
  }
  if (sessionKey !== undefined) {
    const bound = await profile.records.runs.sessionOfKey(caller, sessionKey);
    if (bound) return { id: bound };
  }
  return { create: true };
}

/**
 * The first run with a key: a new session, bound to the key. Two first runs racing (here or on
 * another node) both create one; the first binding wins and the other's session is closed unused.
 */
async function createForKey(s: RunStart, conversation: Conversation, model: { id: string; provider: string } | undefined): Promise<Target> {
  const { caller, profile } = s;
  const snap = await profile.sessions.create(caller, { ...createParams(conversation, model), title: `run ${s.sessionKey!}`.slice(0, 200) });
  const bound = await profile.records.runs.bindKey(caller, s.sessionKey!, snap.session_id);
  if (bound !== snap.session_id) await profile.sessions.close(caller, snap.session_id).catch(() => undefined);
  return { id: bound };
}

function createParams(conversation: Conversation, model: { id: string; provider: string } | undefined) {
  return {
    ...(model ? { provider: model.provider, model: model.id } : {}),
    ...(conversation.system !== undefined ? { system_prompt: conversation.system } : {}),
  };
}

/** `model` on an existing session: switched as `config.set model` does (guards included) before the turn. */
async function switchModel({ caller, profile }: RunStart, sessionId: string, model: { id: string; provider: string }): Promise<void> {
  const snap = await profile.sessions.resume(caller, sessionId);
  if (snap.model === model.id && snap.provider === model.provider) return;
  const result = await profile.sessions.configSet(caller, snap.session_id, "model", { provider: model.provider, model: model.id });
  if (result.status === "confirm_required") {
    throw new HttpError(409, "model_confirmation_required", result.confirm_message ?? `Switching to ${model.id} needs confirmation`, "model");
  }
}

async function recordRun({ caller, profile, sessionKey }: RunStart, turn: StartedTurn): Promise<RunRecord> {
  return profile.records.runs.create(caller, {
    session_id: turn.sessionId,
    turn_id: turn.result.turn_id,
    // A duplicate (a retry whose first attempt died after submitting) names an earlier turn: its
    // frames are before the session's latest seq, so the run reads the log from the start.
    after_seq: turn.result.status === "duplicate" ? 0 : (turn.opened?.latestSeq ?? 0),
    model: turn.opened?.model ?? "",
    session_key: sessionKey ?? null,
    status: turn.result.status === "queued" ? "queued" : "running",
  });
}
