/**
 * The OpenAI Responses API: `POST /v1/responses`, `GET /v1/responses/{id}` (optionally as a
 * resumable stream: `?stream=true&starting_after=N`), `POST /v1/responses/{id}/cancel`.
 *
 * A response is one turn of a (hidden) session: a new session seeded from `input` (and
 * `instructions`), or — with `previous_response_id` — the session of that response, continued.
 * The `responses` row only names the session and turn; status, output and the event stream are
 * derived from the event log (response-events.ts), so they survive restarts. While the turn runs,
 * a tracker in this process follows it and stores the final object once it ends.
 *
 * Every route addresses the profile named by `X-Tether-Profile` or `?profile=` (default `default`):
 * the session and the `responses` row live in that profile's store, so a response (or a
 * `previous_response_id`) of another profile is 404 `response_not_found`, as a session of another
 * profile is on the sessions API. An `Idempotency-Key` record (default profile's store) remembers
 * the profile, so a replay answers from the profile the response was made in.
 */
import type { Hono } from "hono";
import { z } from "zod";
import { EventType, type Snapshot } from "../../protocol/index.js";
import { DEFAULT_PROFILE, type Caller, type SessionManager } from "../../sessions/index.js";
import type { ResponseRow } from "../../sessions/http-support.js";
import { callerOf, clientGone, managerOf, profileOf, type AppContext, type AppEnv, type HttpApi } from "./context.js";
import { HttpError, HttpErrors } from "./errors.js";
import { boundToStream, FrameTap } from "./frame-tap.js";
import { claimIdempotency, underClaim, type IdempotencyClaim } from "./idempotency.js";
import { queryBool, queryInt, readJson } from "./json-body.js";
import { resolveModel } from "./models.js";
import { InputItem, toConversation, type Conversation } from "./openai-input.js";
import { ResponseBuilder, SEQ_STRIDE, TERMINAL_STATUSES, type ResponseEvent, type ResponseObject } from "./response-events.js";
import { sseResponse } from "./sse.js";
import { followTurn } from "./turn-follow.js";

const ResponsesBody = z
  .object({
    model: z.string().min(1),
    input: z.union([z.string().min(1), z.array(InputItem).min(1)]),
    instructions: z.string().nullable().optional(),
    previous_response_id: z.string().min(1).nullable().optional(),
    store: z.boolean().nullable().optional(),
    background: z.boolean().nullable().optional(),
    stream: z.boolean().nullable().optional(),
    metadata: z.record(z.string(), z.string()).nullable().optional(),
  })
  .passthrough();
type ResponsesBody = z.infer<typeof ResponsesBody>;

/** Who asks, in which profile (whose manager holds the session and the response row). */
interface Scope {
  caller: Caller;
  profile: string;
  sessions: SessionManager;
}

/** What an `Idempotency-Key` record of `POST /v1/responses` keeps (`profile` absent in older records: default). */
interface StoredResponseRef {
  response_id: string;
  profile?: string;
}

interface Tracker {
  tap: FrameTap;
  done: Promise<ResponseObject>;
}

export class ResponsesApi {
  /** Responses whose turn this process follows right now. */
  private readonly trackers = new Map<string, Tracker>();

  constructor(private readonly api: HttpApi) {}

  mount(app: Hono<AppEnv>): void {
    app.post("/v1/responses", (c) => this.create(c));
    app.get("/v1/responses/:id", (c) => this.retrieve(c));
    app.post("/v1/responses/:id/cancel", (c) => this.cancel(c));
  }

  /** The caller and the profile the request names, with that profile's manager. */
  private async scope(c: AppContext, profile = profileOf(c)): Promise<Scope> {
    return { caller: callerOf(c), profile, sessions: await managerOf(this.api, profile) };
  }

  private async create(c: AppContext): Promise<Response> {
    const caller = callerOf(c);
    const body = await readJson(c, ResponsesBody);
    const claim = await claimIdempotency(c, this.api.manager, caller);
    if (claim.kind === "replay") {
      const ref = claim.body as StoredResponseRef;
      const scope = await this.scope(c, ref.profile ?? DEFAULT_PROFILE);
      const row = await this.requireRow(scope, ref.response_id, true);
      if (body.stream) return this.stream(c, scope, row, -1, false);
      return c.json(await this.current(scope, row));
    }
    return underClaim(claim, async () => this.start(c, await this.scope(c), body, claim));
  }

  private async start(c: AppContext, scope: Scope, body: ResponsesBody, claim: IdempotencyClaim): Promise<Response> {
    const { api } = this;
    const { caller, sessions } = scope;
    const model = resolveModel(api, body.model);
    const stored = body.store ?? true;
    const background = body.background ?? false;
    if (background && !stored) throw HttpErrors.invalid("background", "background responses need store: true");
    const items = typeof body.input === "string" ? [{ role: "user" as const, content: body.input }] : body.input;
    const conversation = toConversation(items, "input", body.instructions ?? undefined);
    const previous = body.previous_response_id
      ? await this.requireRow(scope, body.previous_response_id, false, "previous_response_id")
      : null;

    const tap = new FrameTap();
    let sessionId: string | undefined;
    let row: ResponseRow;
    try {
      row = await api.limiter.admit(caller, async () => {
        const opened = previous
          ? await this.continueSession(scope, previous, conversation, tap)
          : await this.newSession(scope, model, conversation, tap);
        sessionId = opened.sessionId;
        const submitted = await sessions.submit(caller, opened.sessionId, conversation.prompt);
        const r: ResponseRow = {
          id: api.ids.next("resp"),
          principal: caller.principal,
          session_id: opened.sessionId,
          turn_id: submitted.turn_id,
          after_seq: opened.afterSeq,
          model: opened.model,
          status: submitted.status === "queued" ? "queued" : "in_progress",
          background,
          stored,
          previous_response_id: previous?.id ?? null,
          instructions: body.instructions ?? null,
          metadata: body.metadata ?? null,
          cancel_requested: false,
          result: null,
          created_at: api.clock.now(),
          completed_at: null,
        };
        await sessions.saveResponse(r);
        return r;
      });
    } catch (err) {
      tap.close();
      if (sessionId) await sessions.detach(caller, sessionId, tap).catch(() => undefined);
      throw err;
    }
    const tracker = this.track(scope, row, tap);
    if (claim.kind === "fresh") await claim.record(200, { response_id: row.id, profile: scope.profile } satisfies StoredResponseRef);

    if (body.stream) return this.stream(c, scope, row, -1, !background);
    if (background) return c.json(new ResponseBuilder(row).snapshot());
    const gone = clientGone(c);
    const onGone = () => void this.stopTurn(scope, row);
    gone.signal.addEventListener("abort", onGone, { once: true });
    const result = await tracker.done;
    gone.finish();
    return c.json(result);
  }

  private async newSession({ caller, sessions }: Scope, model: { id: string; provider: string }, conv: Conversation, tap: FrameTap) {
    const snap = await sessions.create(
      caller,
      {
        provider: model.provider,
        model: model.id,
        hidden: true,
        title: "responses",
        ...(conv.system !== undefined ? { system_prompt: conv.system } : {}),
      },
      tap,
    );
    return this.seeded({ caller, sessions }, snap, conv);
  }

  private async continueSession({ caller, sessions }: Scope, previous: ResponseRow, conv: Conversation, tap: FrameTap) {
    const snap = await sessions.resume(caller, previous.session_id, tap);
    return this.seeded({ caller, sessions }, snap, conv);
  }

  /** Appends the request's earlier items to the session; the response's events start after them. */
  private async seeded({ caller, sessions }: Pick<Scope, "caller" | "sessions">, snap: Snapshot, conv: Conversation) {
    let afterSeq = snap.latest_seq;
    if (conv.seed.length > 0) afterSeq = (await sessions.appendHistory(caller, snap.session_id, conv.seed)).latest_seq;
    return { sessionId: snap.session_id, afterSeq, model: snap.model };
  }

  /** Follows the turn to its end in the background, then stores the final object. */
  private track(scope: Scope, row: ResponseRow, tap: FrameTap): Tracker {
    const { caller, sessions } = scope;
    const done = (async () => {
      try {
        await followTurn(tap, row.turn_id, new AbortController().signal, () => undefined);
      } finally {
        tap.close();
        await sessions.detach(caller, row.session_id, tap).catch(() => undefined);
      }
      this.trackers.delete(row.id);
      const fresh = (await sessions.getResponse(caller, row.id)) ?? row;
      return this.current(scope, fresh);
    })();
    done.catch((err: unknown) => this.api.logger.error({ err, response_id: row.id }, "response tracker failed"));
    const tracker = { tap, done };
    this.trackers.set(row.id, tracker);
    return tracker;
  }

  /**
   * The response as of now, derived from the event log; stored once terminal. A response nobody
   * follows any more whose turn never ended (a dead process, a dropped queue) is finished here:
   * resuming the session completes a turn a dead process left in flight; a turn that never
   * started is over as `incomplete` (or `cancelled`).
   */
  private async current(scope: Scope, row: ResponseRow): Promise<ResponseObject> {
    if (row.result) return JSON.parse(row.result) as ResponseObject;
    const { caller, sessions: manager } = scope;
    let { builder, live } = await this.rebuild(scope, row);
    if (!builder.done && !this.trackers.has(row.id)) {
      if (!live) {
        await manager.resume(caller, row.session_id).catch(() => undefined);
        ({ builder } = await this.rebuild(scope, row));
      }
      if (!builder.done) builder.cancelQueued(row.cancel_requested ? "cancelled" : "incomplete");
    }
    const response = builder.snapshot();
    if (builder.done && TERMINAL_STATUSES.has(response.status)) {
      await manager.patchResponse(row.id, {
        status: response.status,
        result: JSON.stringify(response),
        completed_at: this.api.clock.now(),
      });
    }
    return response;
  }

  private async rebuild({ caller, sessions }: Scope, row: ResponseRow): Promise<{ builder: ResponseBuilder; live: boolean }> {
    const builder = new ResponseBuilder(row);
    const replay = await sessions.replay(caller, row.session_id, row.after_seq);
    for (const f of replay.events) builder.push(f);
    return { builder, live: replay.live };
  }

  private async retrieve(c: AppContext): Promise<Response> {
    const scope = await this.scope(c);
    const row = await this.requireRow(scope, c.req.param("id") ?? "", false);
    if (queryBool(c, "stream")) return this.stream(c, scope, row, queryInt(c, "starting_after") ?? -1, false);
    return c.json(await this.current(scope, row));
  }

  /** Idempotent: a finished response answers as it is; a running one is interrupted, a queued one dropped. */
  private async cancel(c: AppContext): Promise<Response> {
    const scope = await this.scope(c);
    let row = await this.requireRow(scope, c.req.param("id") ?? "", false);
    if (!row.result && !TERMINAL_STATUSES.has(row.status)) {
      await this.stopTurn(scope, row);
      await this.trackers.get(row.id)?.done.catch(() => undefined);
      row = (await scope.sessions.getResponse(scope.caller, row.id)) ?? row;
    }
    return c.json(await this.current(scope, row));
  }

  private async stopTurn({ caller, sessions }: Scope, row: ResponseRow): Promise<void> {
    await sessions.patchResponse(row.id, { cancel_requested: true });
    row.cancel_requested = true;
    const outcome = await sessions.cancelTurn(caller, row.session_id, row.turn_id).catch(() => "idle" as const);
    // A dropped (queued) turn will never emit: stop following it.
    if (outcome === "dequeued") this.trackers.get(row.id)?.tap.close();
  }

  /**
   * Streams the response's events numbered above `startingAfter`: first those already in the event
   * log (store, plus the ring while the session is live here), then live ones until it ends.
   */
  private async stream(c: AppContext, scope: Scope, row: ResponseRow, startingAfter: number, cancelOnDisconnect: boolean) {
    const { api } = this;
    const { caller, sessions } = scope;
    const tap = new FrameTap();
    let attached = false;
    if (!row.result && !TERMINAL_STATUSES.has(row.status)) {
      await sessions.resume(caller, row.session_id, tap);
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
        onDisconnect: cancelOnDisconnect ? () => void this.stopTurn(scope, row) : undefined,
      },
      async (sse) => {
        boundToStream(tap, sse, api.flow.hardBytes, () =>
          api.logger.warn({ session_id: row.session_id, response_id: row.id }, "slow Responses stream reader over the hard limit: ending the stream"),
        );
        try {
          const builder = new ResponseBuilder(row, startingAfter);
          await send(sse, builder.created());
          const replay = await sessions.replay(caller, row.session_id, row.after_seq);
          for (const f of replay.events) await send(sse, builder.push(f));
          while (!builder.done && attached) {
            const f = await tap.next(sse.signal);
            if (!f || f.type === EventType.SessionClosed) break;
            await send(sse, builder.push(f));
          }
          // Over the hard limit the reader resumes with starting_after; nothing more is written.
          if (!builder.done && !sse.signal.aborted && !tap.overflowed) {
            // The turn can no longer end by itself (see current()): close the stream with its end.
            const final = await this.current(scope, (await sessions.getResponse(caller, row.id)) ?? row);
            const type = final.status === "completed" ? "response.completed" : final.status === "failed" ? "response.failed" : "response.incomplete";
            const seq = Math.max(startingAfter + 1, (replay.latest_seq + 1) * SEQ_STRIDE);
            await send(sse, [{ type, sequence_number: seq, response: final }]);
          }
        } finally {
          tap.close();
          if (attached) await sessions.detach(caller, row.session_id, tap).catch(() => undefined);
        }
      },
    );
  }

  /** The caller's stored response in the scope's profile; missing (or another profile's, another principal's) → 404. */
  private async requireRow({ caller, sessions, profile }: Scope, id: string, evenUnstored: boolean, param: string | null = null): Promise<ResponseRow> {
    const row = await sessions.getResponse(caller, id);
    if (!row || (!row.stored && !evenUnstored)) {
      throw new HttpError(404, "response_not_found", `No response with id ${id} in profile "${profile}"`, param);
    }
    return row;
  }
}
