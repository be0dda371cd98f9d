/**
 * What a client does to a run while it goes: stop it, answer what it waits for, steer it.
 *
 *   POST /v1/runs/{id}/stop       → { run_id, status: "stopping" } — or the final status when it is over
 *   POST /v1/runs/{id}/approval   { choice, request_id?, all?, note? } → { run_id, status, resolved: [...] };
 *                                 409 `no_open_request` when the run waits for nothing
 *   POST /v1/runs/{id}/steer      { text } → { run_id, status, turn_id, session_id }: `steered` when the
 *                                 text joins this run's turn; 409 `turn_not_started` while the run is
 *                                 queued; after it, the text starts a turn of its own
 */
import * as z from "zod";
import { ErrorCode, TetherError } from "../../protocol/index.js";
import type { RunRecord } from "../../sessions/index.js";
import type { AppContext } from "./context.js";
import { HttpError, HttpErrors } from "./errors.js";
import { readJson } from "./json-body.js";
import { TERMINAL_RUN_STATUSES } from "./run-events.js";
import type { RunScope, RunViews } from "./runs-view.js";

const ApprovalBody = z
  .object({
    choice: z.string().min(1).max(50),
    request_id: z.string().min(1).max(200).optional(),
    all: z.boolean().optional(),
    note: z.string().max(10_000).optional(),
  })
  .strict();

const SteerBody = z.object({ text: z.string().min(1).max(1_000_000) }).strict();

export class RunControl {
  constructor(private readonly views: RunViews) {}

  /**
   * Interrupts the run's turn (or drops it from the queue). Asked once, remembered: a turn that
   * then ends interrupted reads `cancelled`. The answer does not wait for the turn to settle.
   */
  async stop(scope: RunScope, record: RunRecord): Promise<{ run_id: string; status: string }> {
    const now = await this.views.current(scope, record);
    if (TERMINAL_RUN_STATUSES.has(now.status)) return { run_id: record.id, status: now.status };
    record.stop_requested = true;
    await scope.profile.records.runs.patch(record.id, { stop_requested: true });
    const outcome = scope.profile.sessions.cancelTurn(scope.caller, now.session_id, record.turn_id).then(async (o) => {
      if (o === "dequeued") await this.views.settleAbandoned(scope, record);
      return o;
    });
    outcome.catch(() => undefined);
    // A queued turn is dropped at once: its run is over by the time we answer.
    if (now.status === "queued" && (await outcome) === "dequeued") {
      return { run_id: record.id, status: (await this.views.current(scope, record)).status };
    }
    return { run_id: record.id, status: "stopping" };
  }

  /** Answers the run's open approval(s) as `request.respond` does: one by id, the only one, or all. */
  async approval(c: AppContext, scope: RunScope, record: RunRecord) {
    const body = await readJson(c, ApprovalBody);
    const open = (await this.views.current(scope, record)).open_requests ?? [];
    if (open.length === 0) throw new HttpError(409, "no_open_request", `Run ${record.id} waits for no approval`);
    let chosen = open;
    if (body.request_id !== undefined) {
      chosen = open.filter((r) => r.request_id === body.request_id);
      if (chosen.length === 0) throw new HttpError(409, "no_open_request", `Run ${record.id} waits for no request ${body.request_id}`, "request_id");
    } else if (!body.all && open.length > 1) {
      throw HttpErrors.invalid("request_id", `Run ${record.id} waits for ${open.length} requests: name one with request_id, or answer them all with all: true`);
    }
    const resolved = [];
    for (const r of chosen) {
      const answer = { choice: body.choice, ...(body.note !== undefined ? { note: body.note } : {}) };
      resolved.push(await scope.profile.sessions.respond(scope.caller, record.session_id, r.request_id, answer));
    }
    return { run_id: record.id, status: (await this.views.current(scope, record)).status, resolved };
  }

  /**
   * Steers this run's turn only, by its turn id: a run still queued is 409 `turn_not_started`
   * (its steer never lands in the run ahead of it); after the run the text starts a turn of its own.
   */
  async steer(c: AppContext, scope: RunScope, record: RunRecord) {
    const body = await readJson(c, SteerBody);
    const now = await this.views.current(scope, record);
    const result = await scope.profile.sessions.steer(scope.caller, now.session_id, body.text, record.turn_id).catch((err: unknown) => {
      if (err instanceof TetherError && err.code === ErrorCode.TurnNotStarted) {
        throw new HttpError(
          409,
          "turn_not_started",
          `Run ${record.id} is queued behind the session's running turn and has not started: steer it once it runs (or stop it and start a run with the text)`,
        );
      }
      throw err;
    });
    return { run_id: record.id, status: result.status, turn_id: result.turn_id, session_id: result.session_id ?? now.session_id };
  }
}
