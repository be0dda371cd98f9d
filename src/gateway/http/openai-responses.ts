/**
 * The OpenAI Responses API: `POST /v1/responses`, `GET /v1/responses/{id}` (optionally as a
 * resumable stream: `?stream=true&starting_after=N`), `POST /v1/responses/{id}/cancel`,
 * `DELETE /v1/responses/{id}`.
 *
 * A response is one turn of a (hidden) session: a new session seeded from `input` (and
 * `instructions`), or — with `previous_response_id` — the session of that response, continued.
 * The response record only names the session and turn; status, output and the event stream are
 * derived from the session's frames (response-events.ts), so they survive restarts. While the turn
 * runs, a tracker in this process builds the response from the frames it receives and stores the
 * final object once it ends; without a tracker (after a restart, on another node) the response is
 * rebuilt from the event log.
 *
 * Every route addresses the profile named by `X-Tether-Profile` or `?profile=` (default `default`):
 * the session and the response record live in that profile's store, so a response (or a
 * `previous_response_id`) of another profile is 404 `response_not_found`, as a session of another
 * profile is on the sessions API. An `Idempotency-Key` record remembers the profile, so a replay
 * answers from the profile the response was made in.
 */
import type { Routes } from "./lazy-routes.js";
import * as z from "zod";
import { ErrorCode, EventType, RequestKind, TetherError } from "../../protocol/index.js";
import { DEFAULT_PROFILE, type Caller, type Profile, type ResponseRecord, type SeedMessage } from "../../sessions/index.js";
import type { ToolResult } from "./chat-input.js";
import { callerOf, clientGone, idempotencyRecords, profileOf, type AppContext, type AppEnv, type HttpApi } from "./context.js";
import { HttpError, HttpErrors } from "./errors.js";
import { boundToStream, FrameTap, OVERFLOW_CUT_MS } from "./frame-tap.js";
import { claimIdempotency, underClaim, type IdempotencyClaim } from "./idempotency.js";
import { queryBool, queryInt, readJson, UNKNOWN_PARAMETER } from "./json-body.js";
import { resolveModel } from "./models.js";
import { checkCallPairs, toResponsesConversation } from "./responses-input.js";
import { inputItemsOf, type ApprovalResponseItem, type ResponsesItem } from "./responses-items.js";
import { responsesCallParams, type ResponsesCallParams } from "./responses-params.js";
import { refuseWhileCallsWait } from "./openai-chat.js";
import { ResponseBuilder, SEQ_STRIDE, TERMINAL_STATUSES, type ResponseEvent, type ResponseObject } from "./response-events.js";
import { ResponseTracker, type ResponseEventQueue } from "./response-tracker.js";
import { sseResponse } from "./sse.js";
import { cutAfterResults } from "./cut-continuation.js";
import { withTrace } from "./access-log.js";

/**
 * The body: `input` items are checked one by one (responses-items.ts), `tools`, `tool_choice`,
 * `text`, `reasoning` and `stream_options` with the parameter table (responses-params.ts).
 */
const ResponsesBody = z
  .object({
    model: z.string().min(1),
    input: z.union([z.string().min(1), z.array(z.unknown()).min(1)]),
    instructions: z.string().nullable().optional(),
    previous_response_id: z.string().min(1).nullable().optional(),
    store: z.boolean().nullable().optional(),
    background: z.boolean().nullable().optional(),
    stream: z.boolean().nullable().optional(),
    metadata: z.record(z.string(), z.string()).nullable().optional(),
  })
  .passthrough();
type ResponsesBody = z.infer<typeof ResponsesBody>;

/** Who asks, in which profile (whose sessions hold the turn and whose records the response). */
interface Scope {
  caller: Caller;
  profile: Profile;
}

/** What an `Idempotency-Key` record of `POST /v1/responses` keeps (`profile` absent in older records: default). */
interface StoredResponseRef {
  response_id: string;
  profile?: string;
}

export class ResponsesApi {
  /** Responses whose turn this process follows right now. */
  private readonly trackers = new Map<string, ResponseTracker>();

  constructor(private readonly api: HttpApi) {}

  mount(app: Routes): void {
    app.post("/v1/responses", (c) => this.create(c));
    app.get("/v1/responses/:id", (c) => this.retrieve(c));
    app.post("/v1/responses/:id/cancel", (c) => this.cancel(c));
    app.delete("/v1/responses/:id", (c) => this.delete(c));
  }

  /** The caller and the profile the request names. */
  private async scope(c: AppContext): Promise<Scope> {
    return { caller: callerOf(c), profile: await profileOf(c) };
  }

  private async create(c: AppContext): Promise<Response> {
    const caller = callerOf(c);
    const body = await readJson(c, ResponsesBody, { unknownCode: UNKNOWN_PARAMETER });
    const call = responsesCallParams(body);
    const items = inputItemsOf(body.input);
    const claim = await claimIdempotency(c, idempotencyRecords(this.api), caller);
    if (claim.kind === "replay") {
      const ref = claim.body as StoredResponseRef;
      const scope = { caller, profile: await this.api.profiles.profile(ref.profile ?? DEFAULT_PROFILE) };
      const record = await this.requireRecord(scope, ref.response_id, true);
      const resumed = await this.resumeCut(c, scope, body, items, call, claim, record);
      if (resumed) return resumed;
      if (body.stream) return this.stream(c, scope, record, -1, false);
      return c.json(await this.current(scope, record));
    }
    return underClaim(claim, async () => this.start(c, await this.scope(c), body, items, call, claim));
  }

  private async start(c: AppContext, scope: Scope, body: ResponsesBody, items: ResponsesItem[], call: ResponsesCallParams, claim: IdempotencyClaim): Promise<Response> {
    const { api } = this;
    const model = resolveModel(api, body.model);
    const stored = body.store ?? true;
    const background = body.background ?? false;
    if (background && !stored) throw HttpErrors.invalid("background", "background responses need store: true");
    const approvals = items.filter((i): i is ApprovalResponseItem => i.type === "mcp_approval_response");
    if (approvals.length > 0) return this.answerApprovals(c, scope, body, call, claim, approvals, items.length);
    const conversation = toResponsesConversation(items, body.instructions ?? undefined);
    if (conversation.toolResults.length > 0 && body.previous_response_id) return this.answerCalls(c, scope, body, call, claim, items, conversation.toolResults);
    // A list sent whole must pair every call with its output, as OpenAI's does.
    if (!body.previous_response_id) checkCallPairs(items);
    const previous = body.previous_response_id
      ? await this.requireRecord(scope, body.previous_response_id, false, "previous_response_id")
      : null;
    if (previous) await refuseWhileCallsWait(scope.profile, scope.caller, previous.session_id, "input", "a function_call_output");
    // Stateless continuation: the outputs that end the list are history too; the model answers them.
    const results: SeedMessage[] = conversation.toolResults.map((r) => ({ role: "tool", content: r.content, tool_call_id: r.callId }));
    const { caller, profile } = scope;
    const tap = new FrameTap();
    const create = {
      provider: model.provider,
      model: model.id,
      hidden: true,
      title: "responses",
      ...(conversation.system !== undefined ? { system_prompt: conversation.system } : {}),
    };
    const record = await profile.sessions
      .startTurn(
        {
          caller,
          session: previous ? { id: previous.session_id, resume: true } : { create },
          history: [...conversation.seed, ...results],
          text: conversation.promptParts ? "" : conversation.prompt,
          ...(conversation.promptParts ? { parts: conversation.promptParts } : {}),
          ...(results.length > 0 ? { noInput: true } : {}),
          clientTools: call.clientTools,
          callOptions: call.callOptions,
          ...withTrace(c),
          viewer: tap,
        },
        // The response's events start after the seeded history.
        (turn) =>
          profile.records.createResponse(caller, {
            session_id: turn.sessionId,
            turn_id: turn.result.turn_id,
            after_seq: turn.opened!.latestSeq,
            model: turn.opened!.model,
            status: turn.result.status === "queued" ? "queued" : "in_progress",
            background,
            stored,
            previous_response_id: previous?.id ?? null,
            instructions: body.instructions ?? null,
            metadata: body.metadata ?? null,
            echo: call.echo,
          }),
      )
      .catch((err: unknown) => {
        tap.close();
        throw toolNameError(err);
      });
    return this.answer(c, scope, body, claim, record, tap);
  }

  /**
   * `function_call_output` items with `previous_response_id` answer the client tool calls its turn
   * waits for (each the request of kind `client_tool` with that call id), and the new response
   * follows the same turn as it continues. A call id that is not pending is a 400 naming the item;
   * so is a pending call of that turn left unanswered. They cannot be mixed with new input.
   */
  private async answerCalls(c: AppContext, scope: Scope, body: ResponsesBody, call: ResponsesCallParams, claim: IdempotencyClaim, items: ResponsesItem[], results: ToolResult[]): Promise<Response> {
    if (results.length !== items.length) throw HttpErrors.invalid("input", "function_call_output items cannot be mixed with new input when previous_response_id continues a response");
    const previous = await this.requireRecord(scope, body.previous_response_id!, false, "previous_response_id");
    const { caller, profile } = scope;
    const tap = new FrameTap();
    const snap = await profile.sessions.resume(caller, previous.session_id, tap);
    const sid = snap.session_id;
    try {
      const pending = snap.open_requests.filter((r) => r.kind === RequestKind.ClientTool);
      const answers = results.map((r) => {
        const open = pending.find((p) => p.call_id === r.callId);
        if (!open) throw HttpErrors.invalid(`input.${r.index}.call_id`, `No function call ${r.callId} is pending in this conversation`);
        return { result: r, open };
      });
      const turnId = answers[0]!.open.turn_id;
      const answered = new Set(results.map((r) => r.callId));
      const missing = pending.find((p) => p.turn_id === turnId && !answered.has(p.call_id ?? ""));
      if (missing) throw HttpErrors.invalid("input", `Function call ${missing.call_id} (${missing.tool}) is waiting for its output too: send a function_call_output for every call`);
      await profile.sessions.configure(caller, sid, { clientTools: call.clientTools, callOptions: call.callOptions }).catch((err: unknown) => {
        throw toolNameError(err);
      });
      const record = await this.createContinuation(scope, body, call, previous, { sessionId: sid, turnId, afterSeq: snap.latest_seq });
      const response = this.answer(c, scope, body, claim, record, tap);
      for (const { result, open } of answers) {
        await profile.sessions.respond(caller, sid, open.request_id, { output: result.content }).catch((err: unknown) => {
          if (err instanceof TetherError && (err.code === ErrorCode.RequestNotFound || err.code === ErrorCode.RequestResolved)) {
            throw HttpErrors.invalid(`input.${result.index}.call_id`, `Function call ${result.callId} is not pending any more: ${err.message}`);
          }
          throw err;
        });
      }
      return response;
    } catch (err) {
      tap.close();
      await profile.sessions.detach(caller, sid, tap).catch(() => undefined);
      throw err;
    }
  }

  /**
   * A retry (same `Idempotency-Key`) of a `function_call_output` continuation whose answer a crash
   * cut (cut-continuation.ts): the outputs are stored and the calls answered, so the model is asked
   * again on the history as it stands — a turn with no new input — and the same response (its id,
   * already recorded under the key) follows that turn from here. Null when it is not that case.
   */
  private async resumeCut(
    c: AppContext,
    scope: Scope,
    body: ResponsesBody,
    items: ResponsesItem[],
    call: ResponsesCallParams,
    claim: IdempotencyClaim,
    record: ResponseRecord,
  ): Promise<Response | null> {
    const results = toResponsesConversation(items, undefined).toolResults;
    if (!body.previous_response_id || results.length === 0 || results.length !== items.length || this.trackers.has(record.id)) return null;
    if (record.result && (JSON.parse(record.result) as ResponseObject).status === "completed") return null;
    const { caller, profile } = scope;
    const tap = new FrameTap();
    const snap = await profile.sessions.resume(caller, record.session_id, tap).catch(() => null);
    if (!snap) return null;
    try {
      const pending = snap.open_requests.some((r) => r.kind === RequestKind.ClientTool && results.some((x) => x.callId === r.call_id));
      // Its outputs were stored but not yet used: opening the session resumed the turn, which makes
      // the model call again now — the response follows it from here.
      const mark = snap.running && !pending ? await profile.sessions.turn(caller, snap.session_id, record.turn_id) : null;
      const following = mark !== null && mark.complete === undefined;
      if (!following && (pending || snap.running || !(await cutAfterResults(profile.sessions, caller, snap.session_id, results)))) {
        await profile.sessions.detach(caller, snap.session_id, tap).catch(() => undefined);
        return null;
      }
      const reset = { after_seq: snap.latest_seq, status: "in_progress", result: null, completed_at: null };
      const moved = following
        ? await profile.records.patchResponse(record.id, reset).then(() => ({ ...record, ...reset }))
        : await profile.sessions.startTurn(
            {
              caller,
              session: { id: snap.session_id },
              text: "",
              noInput: true,
              clientTools: call.clientTools,
              callOptions: call.callOptions,
              ...withTrace(c),
            },
            async (turn) => {
              const patch = { ...reset, session_id: turn.sessionId, turn_id: turn.result.turn_id };
              await profile.records.patchResponse(record.id, patch);
              return { ...record, ...patch };
            },
          );
      this.api.logger.info({ session_id: snap.session_id, response_id: record.id, turn_id: moved.turn_id }, "a continuation cut by a restart is resumed from its stored tool outputs");
      return await this.answer(c, scope, body, claim, moved, tap);
    } catch (err) {
      tap.close();
      await profile.sessions.detach(caller, snap.session_id, tap).catch(() => undefined);
      throw toolNameError(err);
    }
  }

  /**
   * The record of a response that goes on with a previous one's turn (tool outputs, approvals), in
   * the session that turn now lives in (the live tip, when the conversation was compressed since).
   */
  private createContinuation(
    scope: Scope,
    body: ResponsesBody,
    call: ResponsesCallParams,
    previous: ResponseRecord,
    at: { sessionId: string; turnId: string; afterSeq: number },
  ): Promise<ResponseRecord> {
    return scope.profile.records.createResponse(scope.caller, {
      session_id: at.sessionId,
      turn_id: at.turnId,
      after_seq: at.afterSeq,
      model: previous.model,
      status: "in_progress",
      background: body.background ?? false,
      stored: body.store ?? true,
      previous_response_id: previous.id,
      instructions: body.instructions ?? null,
      metadata: body.metadata ?? null,
      echo: call.echo,
    });
  }

  /** Follows the response's turn and answers as the request asked: a stream, at once (background), or at its end. */
  private async answer(c: AppContext, scope: Scope, body: ResponsesBody, claim: IdempotencyClaim, record: ResponseRecord, tap: FrameTap): Promise<Response> {
    const background = body.background ?? false;
    const tracker = this.track(scope, record, tap, body.stream === true);
    if (claim.kind === "fresh") await claim.record(200, { response_id: record.id, profile: scope.profile.name } satisfies StoredResponseRef);

    if (body.stream) return this.streamTracked(c, scope, record, tracker.events!, !background);
    if (background) return c.json(new ResponseBuilder(record).snapshot());
    const gone = clientGone(c);
    const onGone = () => void this.stopTurn(scope, record);
    gone.signal.addEventListener("abort", onGone, { once: true });
    const result = await tracker.done;
    gone.finish();
    return c.json(result);
  }

  /**
   * `mcp_approval_response` items answer the approvals a previous response ended with: each is
   * answered (approve → once, else deny with its reason), and the new response follows the same
   * turn from here as it continues. They cannot be mixed with new input.
   */
  private async answerApprovals(
    c: AppContext,
    scope: Scope,
    body: ResponsesBody,
    call: ResponsesCallParams,
    claim: IdempotencyClaim,
    approvals: ApprovalResponseItem[],
    itemCount: number,
  ): Promise<Response> {
    if (!body.previous_response_id) throw HttpErrors.invalid("previous_response_id", "mcp_approval_response items answer the response named by previous_response_id");
    if (approvals.length !== itemCount) throw HttpErrors.invalid("input", "mcp_approval_response items cannot be mixed with new input");
    const previous = await this.requireRecord(scope, body.previous_response_id, false, "previous_response_id");
    const { caller, profile } = scope;
    const tap = new FrameTap();
    const snap = await profile.sessions.resume(caller, previous.session_id, tap);
    const fail = (i: number, why: string) => {
      tap.close();
      void profile.sessions.detach(caller, previous.session_id, tap).catch(() => undefined);
      return HttpErrors.invalid(`input.${i}.approval_request_id`, why);
    };
    const waiting = snap.open_requests.find((r) => r.request_id === approvals[0]!.approval_request_id);
    if (!waiting) throw fail(0, `no approval ${approvals[0]!.approval_request_id} is pending in this conversation`);
    const record = await this.createContinuation(scope, body, call, previous, { sessionId: previous.session_id, turnId: waiting.turn_id, afterSeq: snap.latest_seq });
    const response = this.answer(c, scope, body, claim, record, tap);
    for (const [i, a] of approvals.entries()) {
      try {
        await profile.sessions.respond(caller, previous.session_id, a.approval_request_id, { choice: a.approve ? "once" : "deny", note: a.reason ?? undefined });
      } catch (err) {
        if (err instanceof TetherError && (err.code === ErrorCode.RequestNotFound || err.code === ErrorCode.RequestResolved)) throw fail(i, err.message);
        throw err;
      }
    }
    return response;
  }

  /**
   * Follows the turn to its end in the background, building the response from the frames as they
   * arrive, then stores the final object. A turn that never ends here (dropped from the queue, the
   * session closed under it) is finished from the event log as `current` does for any response.
   */
  private track(scope: Scope, record: ResponseRecord, tap: FrameTap, streamed: boolean): ResponseTracker {
    const { caller, profile } = scope;
    const tracker = new ResponseTracker(record, tap, {
      streamed,
      finish: async (builder) => {
        this.trackers.delete(record.id);
        const fresh = (await profile.records.response(caller, record.id)) ?? record;
        if (!builder.done || fresh.result) return this.current(scope, fresh);
        if (fresh.cancel_requested) builder.cancelRequested();
        return this.finish(scope, fresh, builder);
      },
      release: () => profile.sessions.detach(caller, record.session_id, tap).then(() => undefined, () => undefined),
    });
    tracker.done.catch((err: unknown) => this.api.logger.error({ err, response_id: record.id, session_id: record.session_id }, "response tracker failed"));
    this.trackers.set(record.id, tracker);
    return tracker;
  }

  /**
   * The response as of now: stored once terminal; while this process follows its turn, as the
   * tracker built it; otherwise derived from the event log. A response nobody follows any more
   * whose turn never ended (a dead process, a dropped queue) is finished here: resuming the
   * session completes a turn a dead process left in flight; a turn that never started is over as
   * `incomplete` (or `cancelled`).
   */
  private async current(scope: Scope, record: ResponseRecord): Promise<ResponseObject> {
    if (record.result) return JSON.parse(record.result) as ResponseObject;
    const tracked = this.trackers.get(record.id);
    if (tracked) return tracked.builder.snapshot();
    let { builder, live } = await this.rebuild(scope, record);
    if (!builder.done) {
      if (!live) {
        await scope.profile.sessions.resume(scope.caller, record.session_id).catch(() => undefined);
        ({ builder } = await this.rebuild(scope, record));
      }
      if (!builder.done) builder.cancelQueued(record.cancel_requested ? "cancelled" : "incomplete");
    }
    return this.finish(scope, record, builder);
  }

  /** The builder's response; stored as the record's result once it is terminal. */
  private async finish(scope: Scope, record: ResponseRecord, builder: ResponseBuilder): Promise<ResponseObject> {
    const response = builder.snapshot();
    if (builder.done && TERMINAL_STATUSES.has(response.status)) {
      await scope.profile.records.patchResponse(record.id, {
        status: response.status,
        result: JSON.stringify(response),
        completed_at: this.api.clock.now(),
      });
    }
    return response;
  }

  /** The response rebuilt from the session's event log (the store, plus the ring while it is live here). */
  private async rebuild({ caller, profile }: Scope, record: ResponseRecord): Promise<{ builder: ResponseBuilder; live: boolean }> {
    const builder = new ResponseBuilder(record);
    const replay = await profile.sessions.replay(caller, record.session_id, record.after_seq);
    for (const f of replay.events) builder.push(f);
    return { builder, live: replay.live };
  }

  private async retrieve(c: AppContext): Promise<Response> {
    const scope = await this.scope(c);
    const record = await this.requireRecord(scope, c.req.param("id") ?? "", false);
    if (queryBool(c, "stream")) return this.stream(c, scope, record, queryInt(c, "starting_after") ?? -1, false);
    return c.json(await this.current(scope, record));
  }

  /** Idempotent: a finished response answers as it is; a running one is interrupted, a queued one dropped. */
  private async cancel(c: AppContext): Promise<Response> {
    const scope = await this.scope(c);
    let record = await this.requireRecord(scope, c.req.param("id") ?? "", false);
    if (!record.result && !TERMINAL_STATUSES.has(record.status)) {
      await this.stopTurn(scope, record);
      await this.trackers.get(record.id)?.done.catch(() => undefined);
      record = (await scope.profile.records.response(scope.caller, record.id)) ?? record;
    }
    return c.json(await this.current(scope, record));
  }

  /**
   * `DELETE /v1/responses/{id}` → `{ id, object: "response", deleted: true }`, as OpenAI answers.
   * The caller's response only (another principal's, another profile's or an unknown id: 404
   * alike); one still running is cancelled first. The record goes — retrieving it or continuing
   * from it is 404 from then on — while the conversation stays in its session (sessions API).
   */
  private async delete(c: AppContext): Promise<Response> {
    const scope = await this.scope(c);
    const record = await this.requireRecord(scope, c.req.param("id") ?? "", false);
    if (!record.result && !TERMINAL_STATUSES.has(record.status)) {
      await this.stopTurn(scope, record);
      await this.trackers.get(record.id)?.done.catch(() => undefined);
    }
    if (!(await scope.profile.records.deleteResponse(scope.caller, record.id))) throw HttpErrors.responseNotFound(record.id);
    return c.json({ id: record.id, object: "response", deleted: true });
  }

  private async stopTurn({ caller, profile }: Scope, record: ResponseRecord): Promise<void> {
    await profile.records.patchResponse(record.id, { cancel_requested: true });
    record.cancel_requested = true;
    const outcome = await profile.sessions.cancelTurn(caller, record.session_id, record.turn_id).catch(() => "idle" as const);
    // A dropped (queued) turn will never emit: stop following it.
    if (outcome === "dequeued") this.trackers.get(record.id)?.tap.close();
  }

  /**
   * A stream of a response this process follows: the tracker's events — for the request that made
   * it, from `response.created` to its end; for a later one, those after its `starting_after`.
   */
  private streamTracked(c: AppContext, scope: Scope, record: ResponseRecord, events: ResponseEventQueue, cancelOnDisconnect: boolean, done?: () => void): Response {
    const { api } = this;
    return sseResponse(
      c,
      {
        clock: api.clock,
        keepAliveMs: api.config.sse_keepalive_ms,
        metrics: api.metrics,
        onDisconnect: cancelOnDisconnect ? () => void this.stopTurn(scope, record) : undefined,
      },
      async (sse) => {
        events.limitTo({
          hardBytes: api.flow.hardBytes,
          blocked: () => sse.blocked(),
          overflow: () => {
            api.logger.warn({ session_id: record.session_id, response_id: record.id }, "slow Responses stream reader over the hard limit: ending the stream");
            sse.cutAfter(OVERFLOW_CUT_MS);
          },
        });
        try {
          for (let e = await events.next(sse.signal); e; e = await events.next(sse.signal)) await sse.send(e.data, { event: e.type });
        } finally {
          done?.();
        }
      },
    );
  }

  /**
   * Streams the response's events numbered above `startingAfter`. While this process follows its
   * turn, from its tracker (no second viewer, no replay); otherwise first those already in the
   * event log (store, plus the ring while the session is live here), then live ones until it ends.
   */
  private async stream(c: AppContext, scope: Scope, record: ResponseRecord, startingAfter: number, cancelOnDisconnect: boolean) {
    const { api } = this;
    const tracker = this.trackers.get(record.id);
    if (tracker) {
      const events = tracker.subscribe(startingAfter);
      return this.streamTracked(c, scope, record, events, cancelOnDisconnect, () => tracker.unsubscribe(events));
    }
    const { caller, profile } = scope;
    const tap = new FrameTap();
    let attached = false;
    if (!record.result && !TERMINAL_STATUSES.has(record.status)) {
      await profile.sessions.resume(caller, record.session_id, tap);
      attached = true;
    }
    const send = async (sse: { send(d: string, f?: { event?: string }): Promise<void> }, events: ResponseEvent[]) => {
      for (const e of events) await sse.send(JSON.stringify(e), { event: e.type });
    };
    return sseResponse(
      c,
      {
        clock: api.clock,
        keepAliveMs: api.config.sse_keepalive_ms,
        metrics: api.metrics,
        onDisconnect: cancelOnDisconnect ? () => void this.stopTurn(scope, record) : undefined,
      },
      async (sse) => {
        boundToStream(tap, sse, api.flow.hardBytes, () =>
          api.logger.warn({ session_id: record.session_id, response_id: record.id }, "slow Responses stream reader over the hard limit: ending the stream"),
        );
        try {
          const builder = new ResponseBuilder(record, startingAfter);
          await send(sse, builder.created());
          const replay = await profile.sessions.replay(caller, record.session_id, record.after_seq);
          for (const f of replay.events) await send(sse, builder.push(f));
          while (!builder.done && attached) {
            const f = await tap.next(sse.signal);
            if (!f || f.type === EventType.SessionClosed) break;
            await send(sse, builder.push(f));
          }
          // Over the hard limit, or moved to another process (its ring may not hold the frames in
          // between), the reader resumes with starting_after; nothing more is written.
          if (!builder.done && !sse.signal.aborted && !tap.overflowed && !tap.moved) {
            // The turn can no longer end by itself (see current()): close the stream with its end.
            const final = await this.current(scope, (await profile.records.response(caller, record.id)) ?? record);
            await send(sse, [builder.endEvent(final, Math.max(startingAfter + 1, (replay.latest_seq + 1) * SEQ_STRIDE))]);
          }
        } finally {
          tap.close();
          if (attached) await profile.sessions.detach(caller, record.session_id, tap).catch(() => undefined);
        }
      },
    );
  }

  /** The caller's stored response in the scope's profile; missing (or another profile's, another principal's) → 404. */
  private async requireRecord({ caller, profile }: Scope, id: string, evenUnstored: boolean, param: string | null = null): Promise<ResponseRecord> {
    const record = await profile.records.response(caller, id);
    if (!record || (!record.stored && !evenUnstored)) {
      throw new HttpError(404, "response_not_found", `No response with id ${id} in profile "${profile.name}"`, param);
    }
    return record;
  }
}

/** A client tool named like a server tool is a 400 naming the request's tool. */
function toolNameError(err: unknown): unknown {
  if (err instanceof TetherError && err.code === ErrorCode.ToolNameTaken) return HttpErrors.invalid(`tools.${String(err.data?.index ?? 0)}.name`, err.message);
  return err;
}
