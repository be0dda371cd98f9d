/**
 * The OpenAI Responses API: `POST /v1/responses`, `GET /v1/responses/{id}` (optionally as a
 * resumable stream: `?stream=true&starting_after=N`), `POST /v1/responses/{id}/cancel`.
 *
 * A response is one turn of a (hidden) session: a new session seeded from `input` (and
 * `instructions`), or — with `previous_response_id` — the session of that response, continued.
 * The `responses` row only names the session and turn; status, output and the event stream are
 * derived from the event log (response-events.ts), so they survive restarts. While the turn runs,
 * a tracker in this process follows it and stores the final object once it ends.
 */
import type { Hono } from "hono";
import { z } from "zod";
import { EventType } from "../../protocol/index.js";
import type { Caller } from "../../sessions/index.js";
import type { ResponseRow } from "../../sessions/http-support.js";
import { callerOf, clientGone, type AppContext, type AppEnv, type HttpApi } from "./context.js";
import { HttpErrors } from "./errors.js";
import { boundToStream, FrameTap } from "./frame-tap.js";
import { DEFAULT_FLOW_LIMITS } from "../viewer-flow.js";
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

  private async create(c: AppContext): Promise<Response> {
    const caller = callerOf(c);
    const body = await readJson(c, ResponsesBody);
    const claim = await claimIdempotency(c, this.api.manager, caller);
    if (claim.kind === "replay") {
      const row = await this.requireRow(caller, (claim.body as { response_id: string }).response_id, true);
      if (body.stream) return this.stream(c, caller, row, -1, false);
      return c.json(await this.current(caller, row));
    }
    return underClaim(claim, () => this.start(c, caller, body, claim));
  }

  private async start(c: AppContext, caller: Caller, body: ResponsesBody, claim: IdempotencyClaim): Promise<Response> {
    const { api } = this;
    const model = resolveModel(api, body.model);
    const stored = body.store ?? true;
    const background = body.background ?? false;
    if (background && !stored) throw HttpErrors.invalid("background", "background responses need store: true");
    const items = typeof body.input === "string" ? [{ role: "user" as const, content: body.input }] : body.input;
    const conversation = toConversation(items, "input", body.instructions ?? undefined);
    const previous = body.previous_response_id
      ? await this.requireRow(caller, body.previous_response_id, false, "previous_response_id")
      : null;

    const tap = new FrameTap();
    let sessionId: string | undefined;
    let row: ResponseRow;
    try {
      row = await api.limiter.admit(caller, async () => {
        const opened = previous
          ? await this.continueSession(caller, previous, conversation, tap)
          : await this.newSession(caller, model, conversation, tap);
        sessionId = opened.sessionId;
        const submitted = await api.manager.submit(caller, opened.sessionId, conversation.prompt);
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
        await api.manager.saveResponse(r);
        return r;
      });
    } catch (err) {
      tap.close();
      if (sessionId) await api.manager.detach(caller, sessionId, tap).catch(() => undefined);
      throw err;
    }
    const tracker = this.track(caller, row, tap);
    if (claim.kind === "fresh") await claim.record(200, { response_id: row.id });

    if (body.stream) return this.stream(c, caller, row, -1, !background);
    if (background) return c.json(new ResponseBuilder(row).snapshot());
    const gone = clientGone(c);
    const onGone = () => void this.stopTurn(caller, row);
    gone.signal.addEventListener("abort", onGone, { once: true });
    const result = await tracker.done;
    gone.finish();
    return c.json(result);
  }

  private async newSession(caller: Caller, model: { id: string; provider: string }, conv: Conversation, tap: FrameTap) {
    const snap = await this.api.manager.create(
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
    let afterSeq = snap.latest_seq;
    if (conv.seed.length > 0) afterSeq = (await this.api.manager.appendHistory(caller, snap.session_id, conv.seed)).latest_seq;
    return { sessionId: snap.session_id, afterSeq, model: snap.model };
  }

  private async continueSession(caller: Caller, previous: ResponseRow, conv: Conversation, tap: FrameTap) {
    const snap = await this.api.manager.resume(caller, previous.session_id, tap);
    let afterSeq = snap.latest_seq;
    if (conv.seed.length > 0) afterSeq = (await this.api.manager.appendHistory(caller, snap.session_id, conv.seed)).latest_seq;
    return { sessionId: snap.session_id, afterSeq, model: snap.model };
  }

  /** Follows the turn to its end in the background, then stores the final object. */
  private track(caller: Caller, row: ResponseRow, tap: FrameTap): Tracker {
    const done = (async () => {
      try {
        await followTurn(tap, row.turn_id, new AbortController().signal, () => undefined);
      } finally {
        tap.close();
        await this.api.manager.detach(caller, row.session_id, tap).catch(() => undefined);
      }
      this.trackers.delete(row.id);
      const fresh = (await this.api.manager.getResponse(caller, row.id)) ?? row;
      return this.current(caller, fresh);
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
  private async current(caller: Caller, row: ResponseRow): Promise<ResponseObject> {
    if (row.result) return JSON.parse(row.result) as ResponseObject;
    const { manager } = this.api;
    let { builder, live } = await this.rebuild(caller, row);
    if (!builder.done && !this.trackers.has(row.id)) {
      if (!live) {
        await manager.resume(caller, row.session_id).catch(() => undefined);
        ({ builder } = await this.rebuild(caller, row));
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

  private async rebuild(caller: Caller, row: ResponseRow): Promise<{ builder: ResponseBuilder; live: boolean }> {
    const builder = new ResponseBuilder(row);
    const replay = await this.api.manager.replay(caller, row.session_id, row.after_seq);
    for (const f of replay.events) builder.push(f);
    return { builder, live: replay.live };
  }

  private async retrieve(c: AppContext): Promise<Response> {
    const caller = callerOf(c);
    const row = await this.requireRow(caller, c.req.param("id") ?? "", false);
    if (queryBool(c, "stream")) return this.stream(c, caller, row, queryInt(c, "starting_after") ?? -1, false);
    return c.json(await this.current(caller, row));
  }

  /** Idempotent: a finished response answers as it is; a running one is interrupted, a queued one dropped. */
  private async cancel(c: AppContext): Promise<Response> {
    const caller = callerOf(c);
    let row = await this.requireRow(caller, c.req.param("id") ?? "", false);
    if (!row.result && !TERMINAL_STATUSES.has(row.status)) {
      await this.stopTurn(caller, row);
      await this.trackers.get(row.id)?.done.catch(() => undefined);
      row = (await this.api.manager.getResponse(caller, row.id)) ?? row;
    }
    return c.json(await this.current(caller, row));
  }

  private async stopTurn(caller: Caller, row: ResponseRow): Promise<void> {
    await this.api.manager.patchResponse(row.id, { cancel_requested: true });
    row.cancel_requested = true;
    const outcome = await this.api.manager.cancelTurn(caller, row.session_id, row.turn_id).catch(() => "idle" as const);
    // A dropped (queued) turn will never emit: stop following it.
    if (outcome === "dequeued") this.trackers.get(row.id)?.tap.close();
  }

  /**
   * Streams the response's events numbered above `startingAfter`: first those already in the event
   * log (store, plus the ring while the session is live here), then live ones until it ends.
   */
  private async stream(c: AppContext, caller: Caller, row: ResponseRow, startingAfter: number, cancelOnDisconnect: boolean) {
    const { api } = this;
    const tap = new FrameTap();
    let attached = false;
    if (!row.result && !TERMINAL_STATUSES.has(row.status)) {
      await api.manager.resume(caller, row.session_id, tap);
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
        onDisconnect: cancelOnDisconnect ? () => void this.stopTurn(caller, row) : undefined,
      },
      async (sse) => {
        boundToStream(tap, sse, (api.flow ?? DEFAULT_FLOW_LIMITS).hardBytes, () =>
          api.logger.warn({ session_id: row.session_id, response_id: row.id }, "slow Responses stream reader over the hard limit: ending the stream"),
        );
        try {
          const builder = new ResponseBuilder(row, startingAfter);
          await send(sse, builder.created());
          const replay = await api.manager.replay(caller, row.session_id, row.after_seq);
          for (const f of replay.events) await send(sse, builder.push(f));
          while (!builder.done && attached) {
            const f = await tap.next(sse.signal);
            if (!f || f.type === EventType.SessionClosed) break;
            await send(sse, builder.push(f));
          }
          // Over the hard limit the reader resumes with starting_after; nothing more is written.
          if (!builder.done && !sse.signal.aborted && !tap.overflowed) {
            // The turn can no longer end by itself (see current()): close the stream with its end.
            const final = await this.current(caller, (await api.manager.getResponse(caller, row.id)) ?? row);
            const type = final.status === "completed" ? "response.completed" : final.status === "failed" ? "response.failed" : "response.incomplete";
            const seq = Math.max(startingAfter + 1, (replay.latest_seq + 1) * SEQ_STRIDE);
            await send(sse, [{ type, sequence_number: seq, response: final }]);
          }
        } finally {
          tap.close();
          if (attached) await api.manager.detach(caller, row.session_id, tap).catch(() => undefined);
        }
      },
    );
  }

  private async requireRow(caller: Caller, id: string, evenUnstored: boolean, param: string | null = null): Promise<ResponseRow> {
    const row = await this.api.manager.getResponse(caller, id);
    if (!row || (!row.stored && !evenUnstored)) throw HttpErrors.responseNotFound(id, param);
    return row;
  }
}
