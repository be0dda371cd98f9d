/**
 * The sessions API: the WebSocket session methods as REST, plus the session's frames as SSE.
 *
 *   GET    /api/sessions                  list (profile, limit, cursor, include_ended, include_hidden)
 *   POST   /api/sessions                  create → 201 Snapshot
 *   GET    /api/sessions/{id}             SessionSummary
 *   PATCH  /api/sessions/{id}             { title?, archived?, system_prompt? } → SessionSummary
 *   DELETE /api/sessions/{id}             close → { closed, end_reason }; ?purge=true deletes it and its transcript → { deleted }
 *   GET    /api/sessions/{id}/messages    ?after=<message_id>&limit= → { messages, next_cursor }
 *   POST   /api/sessions/{id}/prompt      { text?, parts?, request_id?, from_message_id?, continue? } → 202 { turn_id, trace_id, status }
 *   POST   /api/sessions/{id}/branch      { message_id } → { message_id, versions, status, seq? } (session.branch.select)
 *   POST   /api/sessions/{id}/interrupt   → { status }
 *   PATCH  /api/sessions/{id}/turns/{turn_id}   { text } → { status } (prompt.edit: a queued prompt's text, in its place)
 *   GET    /api/workspace/folders         ?path= → { roots, path, folders, truncated } (workspace.folders: the folder picker)
 *   POST   /api/sessions/{id}/requests/{request_id}   { choice?, note?, content?, output?, error? } → { request_id, status, choice, by }
 *   GET    /api/approvals                 the caller's stored `always` approvals; DELETE /api/approvals/{tool} revokes one
 *   GET    /api/sessions/{id}/events      SSE: `id: <seq>`, `event: <type>`, `data: <Frame>`
 *   GET    /api/sessions/{id}/export      ?format=jsonl|markdown → the transcript and its compression lineage
 *
 * Every route addresses the profile named by `X-Tether-Profile` or `?profile=` (create: also the
 * body's `profile`), default `default`: each profile has its own store.
 *
 * Events resume like `session.events.since`: with `Last-Event-ID` (or `?after_seq=`) the stream
 * starts with every retained frame after it, then one `session.catchup` event
 * `{ latest_seq, truncated, epoch, snapshots }` (text so far of messages still streaming), then live
 * frames. Without a cursor it starts with `session.snapshot` (the Snapshot), then live frames.
 * A slow reader gets the WebSocket flow control (same limits): `session.resync` + a catch-up after
 * lagging, the end of the stream past the hard limit (session-events.ts, sse-flow.ts).
 */
import type { Routes } from "./lazy-routes.js";
import * as z from "zod";
import { PartsParam, PromptEditParams, RequestRespondParams, SessionCreateParams } from "../../protocol/method-params.js";
import type { PartInput } from "../../protocol/index.js";
import { EXPORT_FORMATS, isExportFormat, type SessionManager } from "../../sessions/index.js";
import { callerOf, idempotencyRecords, profileOf, type AppContext, type AppEnv, type HttpApi } from "./context.js";
import { HttpErrors } from "./errors.js";
import { claimIdempotency, underClaim } from "./idempotency.js";
import { queryBool, queryInt, readJson } from "./json-body.js";
import { streamSessionEvents } from "./session-events.js";
import { SseFlowTap } from "./sse-flow.js";
import { sseResponse } from "./sse.js";
import { withTrace } from "./access-log.js";

export { SseEvent } from "./session-events.js";

const PatchBody = z.strictObject({ title: z.string().max(500).optional(), archived: z.boolean().optional(), system_prompt: z.string().max(200_000).optional() });
const RespondBody = RequestRespondParams.omit({ session_id: true, request_id: true, profile: true });
/** `from_message_id`: a new version of that prompt (branching); then `text` may be left out (regenerate). */
const PromptBody = z
  .strictObject({
    text: z.string().min(1).max(1_000_000).optional(),
    /** Content parts (text, image, file, audio), as `prompt.submit` takes them. */
    parts: PartsParam.optional(),
    request_id: z.string().min(1).max(200).optional(),
    from_message_id: z.string().min(1).max(200).optional(),
    /** As `prompt.submit { continue: true }`: no prompt, the last reply goes on. */
    continue: z.literal(true).optional(),
  })
  .refine((b) => b.text !== undefined || b.parts !== undefined || b.from_message_id !== undefined || b.continue === true, {
    message: "Required (only a regenerate, with from_message_id, or a continue may leave it out)",
    path: ["text"],
  })
  .refine((b) => b.continue === undefined || (b.text === undefined && b.parts === undefined && b.from_message_id === undefined), {
    message: "continue takes no text, parts or from_message_id",
    path: ["continue"],
  });
const BranchBody = z.strictObject({ message_id: z.string().min(1).max(200) });
const EditBody = PromptEditParams.pick({ text: true });
/** `workspace.folders`'s `path`, as that method bounds it. */
const MAX_FOLDER_PATH = 4096;

function id(c: AppContext): string {
  return c.req.param("id") ?? "";
}

/** The sessions of the profile the request addresses (the create body's `profile` is its fallback). */
async function sessionsOf(c: AppContext, bodyProfile?: string): Promise<SessionManager> {
  return (await profileOf(c, bodyProfile)).sessions;
}

export function mountSessions(app: Routes, api: HttpApi): void {
  mountReads(app);
  mountWrites(app, api);
  app.get("/api/sessions/:id/events", (c) => sessionEvents(c, api));
}

/** The list, one session, its messages, its export. */
function mountReads(app: Routes): void {
  app.get("/api/sessions", async (c) => {
    const params: Parameters<SessionManager["list"]>[1] = {};
    const profile = c.req.query("profile");
    if (profile) params.profile = profile;
    const limit = queryInt(c, "limit", 500);
    if (limit !== undefined) params.limit = Math.max(1, limit);
    const cursor = c.req.query("cursor");
    if (cursor) params.cursor = cursor;
    const ended = queryBool(c, "include_ended");
    if (ended !== undefined) params.include_ended = ended;
    const hidden = queryBool(c, "include_hidden");
    if (hidden !== undefined) params.include_hidden = hidden;
    const query = c.req.query("query");
    // Empty is no filter (as for the other query parameters); the text is 1 to 200 characters.
    if (query !== undefined && query !== "") {
      if (query.length > 200) throw HttpErrors.invalid("query", "query must be at most 200 characters");
      params.query = query;
    }
    const archived = queryBool(c, "archived");
    if (archived !== undefined) params.archived = archived;
    return c.json(await (await sessionsOf(c)).list(callerOf(c), params));
  });

  // A summary, plus what the session waits for: a client that reloads shows its open requests.
  app.get("/api/sessions/:id", async (c) => {
    const sessions = await sessionsOf(c);
    const summary = await sessions.get(callerOf(c), id(c));
    return c.json({ ...summary, open_requests: await sessions.openRequests(callerOf(c), id(c)) });
  });
  app.get("/api/approvals", async (c) => c.json(await (await sessionsOf(c)).approvals(callerOf(c))));

  app.get("/api/sessions/:id/messages", async (c) => {
    const after = c.req.query("after") || c.req.query("after_message_id") || undefined;
    const limit = queryInt(c, "limit", 1000);
    return c.json(await (await sessionsOf(c)).messages(callerOf(c), id(c), after, limit === undefined ? undefined : Math.max(1, limit)));
  });

  // The folder picker (workspace.folders): the profile's roots, and with `path` its sub-folders;
  // a path outside the roots is 403 cwd_outside_workspace (4080), as session.create's cwd.
  app.get("/api/workspace/folders", async (c) => {
    const path = c.req.query("path") || undefined;
    if (path !== undefined && path.length > MAX_FOLDER_PATH) throw HttpErrors.invalid("path", `path must be at most ${MAX_FOLDER_PATH} characters`);
    return c.json(await (await sessionsOf(c)).workspaceFolders(callerOf(c), path));
  });

  // An attachment's bytes, to a principal whose sessions reference it (unknown or another's: 404).
  // Served so a page can show an image but never run what a user uploaded: nosniff, a sandboxing
  // CSP, and anything but a raster image as a download.
  app.get("/api/blobs/:sha256", async (c) => {
    const blob = await (await sessionsOf(c)).readBlob(callerOf(c), c.req.param("sha256") ?? "");
    const inline = /^image\/(png|jpeg|gif|webp|avif)$/.test(blob.media_type);
    return c.body(new Uint8Array(blob.data), 200, {
      "content-type": blob.media_type,
      "content-length": String(blob.data.byteLength),
      "x-content-type-options": "nosniff",
      "content-security-policy": "default-src 'none'; sandbox",
      "content-disposition": inline ? "inline" : "attachment",
      // Content-addressed: the bytes of a hash never change; private: only its principals may see them.
      "cache-control": "private, max-age=31536000, immutable",
    });
  });

  app.get("/api/sessions/:id/export", async (c) => {
    const format = c.req.query("format") ?? "jsonl";
    if (!isExportFormat(format)) throw HttpErrors.invalid("format", `format must be one of ${EXPORT_FORMATS.join(", ")}, got "${format}"`);
    const file = await (await sessionsOf(c)).export(callerOf(c), id(c), format);
    return c.body(file.body, 200, {
      "content-type": file.contentType,
      "content-disposition": `attachment; filename="${file.filename}"`,
      "cache-control": "no-store",
    });
  });
}

/** Create, rename, close, prompt, interrupt. Idempotency records live in the default profile's store. */
function mountWrites(app: Routes, api: HttpApi): void {
  const records = idempotencyRecords(api);

  app.post("/api/sessions", async (c) => {
    const caller = callerOf(c);
    const text = (await c.req.text()).trim();
    const body = text === "" ? {} : await readJson(c, SessionCreateParams);
    const claim = await claimIdempotency(c, records, caller);
    if (claim.kind === "replay") return c.json(claim.body as object, claim.status as 201);
    return underClaim(claim, async () => {
      const snap = await (await sessionsOf(c, body?.profile)).create(caller, body);
      if (claim.kind === "fresh") await claim.record(201, snap);
      return c.json(snap, 201);
    });
  });

  app.patch("/api/sessions/:id", async (c) => {
    const body = await readJson(c, PatchBody);
    const patch: { title?: string; archived?: boolean; system_prompt?: string } = {};
    if (body.title !== undefined) patch.title = body.title;
    if (body.archived !== undefined) patch.archived = body.archived;
    if (body.system_prompt !== undefined) patch.system_prompt = body.system_prompt;
    return c.json(await (await sessionsOf(c)).update(callerOf(c), id(c), patch));
  });

  // Close by default; `?purge=true` deletes the session and its transcript for good.
  app.delete("/api/sessions/:id", async (c) => {
    const sessions = await sessionsOf(c);
    if (queryBool(c, "purge")) return c.json(await sessions.delete(callerOf(c), id(c)));
    return c.json(await sessions.close(callerOf(c), id(c)));
  });

  app.post("/api/sessions/:id/prompt", async (c) => {
    const caller = callerOf(c);
    const body = await readJson(c, PromptBody);
    const claim = await claimIdempotency(c, records, caller);
    if (claim.kind === "replay") return c.json(claim.body as object, claim.status as 202);
    return underClaim(claim, async () => {
      // The key doubles as the turn's request_id: even a retry that lost its key record (another
      // node, a crash before recording) never starts a second turn.
      const requestId = body.request_id ?? (claim.kind === "fresh" ? `http:${claim.key}` : undefined);
      const sessions = await sessionsOf(c);
      const { result } = await sessions.startTurn({
        caller,
        session: { id: id(c), resume: true },
        text: body.text ?? "",
        ...(body.parts ? { parts: body.parts as PartInput[] } : {}),
        ...(requestId !== undefined ? { requestId } : {}),
        ...(body.from_message_id !== undefined ? { fromMessageId: body.from_message_id } : {}),
        ...(body.continue ? { continue: true } : {}),
        ...withTrace(c),
      });
      if (claim.kind === "fresh") await claim.record(202, result);
      return c.json(result, 202);
    });
  });

  app.post("/api/sessions/:id/requests/:request_id", async (c) => {
    const body = await readJson(c, RespondBody);
    const sessions = await sessionsOf(c);
    return c.json(await sessions.respond(callerOf(c), id(c), c.req.param("request_id") ?? "", body));
  });

  app.delete("/api/approvals/:tool", async (c) => c.json(await (await sessionsOf(c)).revokeApproval(callerOf(c), c.req.param("tool") ?? "")));

  // Shows another version of a prompt (session.branch.select); the session is opened here if needed.
  app.post("/api/sessions/:id/branch", async (c) => {
    const caller = callerOf(c);
    const body = await readJson(c, BranchBody);
    const sessions = await sessionsOf(c);
    await sessions.resume(caller, id(c));
    return c.json(await sessions.selectBranch(caller, id(c), body.message_id));
  });

  app.post("/api/sessions/:id/interrupt", async (c) => {
    const caller = callerOf(c);
    const sessions = await sessionsOf(c);
    await sessions.resume(caller, id(c));
    return c.json(await sessions.interrupt(caller, id(c)));
  });

  // prompt.edit: new text for a queued prompt, in its place (`started` / `idle`: nothing changed).
  app.patch("/api/sessions/:id/turns/:turn_id", async (c) => {
    const body = await readJson(c, EditBody);
    const sessions = await sessionsOf(c);
    return c.json({ status: await sessions.editQueued(callerOf(c), id(c), c.req.param("turn_id") ?? "", body.text) });
  });
}

/** `GET /api/sessions/{id}/events`: the session's frames as SSE (session-events.ts). */
async function sessionEvents(c: AppContext, api: HttpApi): Promise<Response> {
  const caller = callerOf(c);
  const sessionId = id(c);
  const after = cursorOf(c);
  const sessions = await sessionsOf(c);
  // Bounded: a client that stops reading lags (deltas skipped, then resync), then is ended.
  const tap = new SseFlowTap(api.flow);
  // Attach first, then catch up: frames delivered meanwhile are in the tap and deduplicated by seq.
  const snapshot = await sessions.resume(caller, sessionId, tap);
  const since = (afterSeq: number, transient: boolean) => sessions.since(caller, sessionId, afterSeq, { transient });
  return sseResponse(c, { clock: api.clock, keepAliveMs: api.config.sse_keepalive_ms, metrics: api.metrics }, async (sse) => {
    try {
      await streamSessionEvents(sse, { sessionId, tap, after, snapshot, since, logger: api.logger });
    } finally {
      tap.close();
      await sessions.detach(caller, sessionId, tap).catch(() => undefined);
    }
  });
}

/** `Last-Event-ID` (what EventSource sends on reconnect) wins over `?after_seq=`. */
function cursorOf(c: AppContext): number | undefined {
  const header = c.req.header("last-event-id");
  if (header !== undefined && header !== "") {
    const n = Number(header);
    if (!Number.isInteger(n) || n < 0) throw HttpErrors.invalid("Last-Event-ID", "Last-Event-ID must be a seq (a non-negative integer)");
    return n;
  }
  return queryInt(c, "after_seq");
}
