/**
 * The runs API: a run is one turn of a session, addressed by its own id.
 *
 *   POST /v1/runs                   { input, session_id?, instructions?, previous_response_id?, model?, tools? }
 *                                   headers Idempotency-Key, X-Session-Key → 202 { run_id, status, session_id }
 *   GET  /v1/runs/{id}              the run object (runs-view.ts): durable, right after a restart, on any node
 *   GET  /v1/runs/{id}/events       SSE, `id: <seq>` per event, Last-Event-ID resumes, ends after the terminal event
 *   POST /v1/runs/{id}/stop | /approval | /steer   (runs-control.ts)
 *
 * Every route addresses the profile named by `X-Tether-Profile` or `?profile=` (default
 * `default`), whose store holds the run and its session. Another principal's run, or another
 * profile's, answers 404 `run_not_found` exactly like a missing one. An `Idempotency-Key` replay
 * answers the same run (with its status now) and `Idempotency-Replayed: true`; the key with a
 * different body is 409 `idempotency_key_reused`. `X-Session-Key` is echoed on every answer to a POST.
 */
import type { Routes } from "./lazy-routes.js";
import { DEFAULT_PROFILE, type Caller, type Profile, type RunRecord } from "../../sessions/index.js";
import { callerOf, idempotencyRecords, profileOf, type AppContext, type AppEnv, type HttpApi } from "./context.js";
import { HttpError } from "./errors.js";
import { claimIdempotency, underClaim } from "./idempotency.js";
import { readJson } from "./json-body.js";
import { RunsBody, SESSION_KEY_HEADER, startRun } from "./runs-start.js";
import { RunControl } from "./runs-control.js";
import { RunViews, type RunScope } from "./runs-view.js";
import { callerTrace } from "./access-log.js";

/** What an `Idempotency-Key` record of `POST /v1/runs` keeps. */
interface StoredRunRef {
  run_id: string;
  session_id: string;
  profile: string;
}

export function runNotFound(id: string): HttpError {
  return new HttpError(404, "run_not_found", `No run with id ${id}`);
}

/** The caller's run in the scope's profile; missing, another principal's or another profile's → 404. */
export async function requireRun({ caller, profile }: RunScope, id: string): Promise<RunRecord> {
  const record = await profile.records.runs.get(caller, id);
  if (!record) throw runNotFound(id);
  return record;
}

export class RunsApi {
  readonly views: RunViews;
  private readonly control: RunControl;

  constructor(private readonly api: HttpApi) {
    this.views = new RunViews(api);
    this.control = new RunControl(this.views);
  }

  mount(app: Routes): void {
    app.post("/v1/runs", (c) => this.create(c));
    app.get("/v1/runs/:id", async (c) => {
      const scope = await this.scope(c);
      return c.json(await this.views.current(scope, await requireRun(scope, c.req.param("id"))));
    });
    app.get("/v1/runs/:id/events", async (c) => {
      const scope = await this.scope(c);
      return this.views.stream(c, scope, await requireRun(scope, c.req.param("id")), lastEventId(c));
    });
    app.post("/v1/runs/:id/stop", async (c) => {
      const scope = await this.scope(c);
      return c.json(await this.control.stop(scope, await requireRun(scope, c.req.param("id"))));
    });
    app.post("/v1/runs/:id/approval", async (c) => {
      const scope = await this.scope(c);
      return c.json(await this.control.approval(c, scope, await requireRun(scope, c.req.param("id"))));
    });
    app.post("/v1/runs/:id/steer", async (c) => {
      const scope = await this.scope(c);
      return c.json(await this.control.steer(c, scope, await requireRun(scope, c.req.param("id"))));
    });
  }

  private async scope(c: AppContext): Promise<RunScope> {
    return { caller: callerOf(c), profile: await profileOf(c) };
  }

  private async create(c: AppContext): Promise<Response> {
    const caller = callerOf(c);
    const body = await readJson(c, RunsBody);
    const sessionKey = readSessionKey(c);
    const echo: Record<string, string> = sessionKey !== undefined ? { "X-Session-Key": sessionKey } : {};
    const claim = await claimIdempotency(c, idempotencyRecords(this.api), caller);
    if (claim.kind === "replay") {
      const ref = claim.body as StoredRunRef;
      const scope = { caller, profile: await this.api.profiles.profile(ref.profile ?? DEFAULT_PROFILE) };
      const run = await this.views.current(scope, await requireRun(scope, ref.run_id));
      return c.json({ run_id: run.run_id, status: run.status, session_id: run.session_id }, 202, { ...echo, "Idempotency-Replayed": "true" });
    }
    return underClaim(claim, async () => {
      const profile = await profileOf(c);
      const record = await startRun(this.api, {
        caller,
        profile,
        body,
        sessionKey,
        requestId: claim.kind === "fresh" ? `run:${claim.key}` : undefined,
        trace: callerTrace(c),
      });
      if (claim.kind === "fresh") await claim.record(202, { run_id: record.id, session_id: record.session_id, profile: profile.name } satisfies StoredRunRef);
      return c.json({ run_id: record.id, status: record.status, session_id: record.session_id }, 202, echo);
    });
  }
}

function readSessionKey(c: AppContext): string | undefined {
  const key = c.req.header(SESSION_KEY_HEADER);
  if (key === undefined) return undefined;
  if (key.length === 0 || key.length > 200) throw new HttpError(400, "invalid_params", "X-Session-Key must be 1 to 200 characters", "X-Session-Key");
  return key;
}

/** `Last-Event-ID` (what EventSource sends on reconnect) wins over `?after=`; undefined → from the start. */
function lastEventId(c: AppContext): number | undefined {
  const raw = c.req.header("last-event-id") || c.req.query("after") || undefined;
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new HttpError(400, "invalid_params", "Last-Event-ID must be an event id (a non-negative integer)", "Last-Event-ID");
  return n;
}

export type { Caller, Profile };
