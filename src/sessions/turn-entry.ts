/**
 * The one way into a turn. Every transport that starts one — WebSocket `prompt.submit`,
 * `/v1/chat/completions`, `/v1/responses`, `POST /api/sessions/{id}/prompt` and `POST /v1/runs`
 * — asks for the same steps and differs only in how it renders the frames:
 *
 *   admit → create, or resume the live tip → seed the history → submit → (a new session's row
 *   stored) → (then) → detach on error
 *
 * A new session's row is not awaited before the turn: the model call starts while it commits
 * (the turn's frames reach viewers only after it); the entry answers once it is stored.
 *
 * The principal's quotas (running + queued turns, queued prompt bytes; sessions/core/
 * principal-quotas.ts) admit every turn here, whichever transport asked; `admit` is an extra
 * admission a caller may add. `then` runs
 * inside it, once the turn is submitted (a Response records its row there), so a failure there too
 * detaches the viewer the request attached.
 *
 *   const turn = await manager.startTurn({ caller, session: { id, resume: true }, text, viewer: tap });
 */
import type { ClientToolSpec, PartInput, Snapshot, SubmitResult, TraceParent } from "../protocol/index.js";
import type { TurnRan, TurnSteps } from "./commands/turn-steps.js";
import type { CallOptions } from "../agent/provider.js";
import type { SeedMessage } from "./core/seed-history.js";
import type { Caller, CreateParams } from "./core/types.js";
import type { Viewer } from "./core/viewer.js";

export type { SubmitOptions, TurnConfig, TurnRan, TurnSteps } from "./commands/turn-steps.js";

/** Runs `start` if the caller may start one more turn now; otherwise throws (429). */
export type Admission = <T>(caller: Caller, start: () => Promise<T>) => Promise<T>;

export interface TurnRequest {
  caller: Caller;
  /**
   * Where the turn runs: a session by id — its live tip; `resume: true` opens it here first (the
   * WebSocket client has resumed already) — or a new session.
   */
  session: { id: string; resume?: boolean } | { create: CreateParams };
  /** Earlier messages of the conversation, written into the transcript before the turn. */
  history?: readonly SeedMessage[];
  text: string;
  /** Content parts of the prompt besides `text` (images, files, audio, more text): parts.ts. */
  parts?: readonly PartInput[];
  /**
   * No new user message: the model answers the history as it stands (a client sent back tool
   * results with the whole conversation). `text` is then ignored.
   */
  noInput?: boolean;
  /**
   * The user's continue (`prompt.submit { continue: true }`): a no-input turn that, like any prompt,
   * runs at the session's owner when another node holds it live. Other no-input turns run here.
   */
  continue?: boolean;
  /** The session's client tools from now on (checked against the gateway's own: 4020); absent = unchanged. */
  clientTools?: readonly ClientToolSpec[];
  /** What the turn's model calls are asked (tool choice, sampling); absent = nothing (each request says it anew). */
  callOptions?: CallOptions;
  /** One turn per request id, across retries and restarts. */
  requestId?: string;
  /** A new version of this user message (branching: edit with `text`, regenerate with `text: ""`). */
  fromMessageId?: string;
  /** The caller's span (W3C `traceparent` / `tracestate`): the turn continues its trace. */
  trace?: TraceParent;
  /** Follows the session's frames from the open on (an HTTP stream); detached if the turn cannot start. */
  viewer?: Viewer;
  admit?: Admission;
}

export interface StartedTurn {
  /** What `prompt.submit` answers (`session_id`/`resolved_from` when the id was not the tip). */
  result: SubmitResult;
  /** The session the turn runs in. */
  sessionId: string;
  /** When the session was created or resumed for the turn: its latest seq before the turn (after the seeded history) and its model. */
  opened?: { latestSeq: number; model: string };
}

/** What the way into a turn calls: the SessionManager's own operations. */
export interface TurnEntrance {
  /** A new session for this turn, answered before its row is stored; `durable` settles when it is. */
  createForTurn(caller: Caller, params: CreateParams, viewer?: Viewer): Promise<{ snapshot: Snapshot; durable: Promise<void> }>;
  resume(caller: Caller, sessionId: string, viewer?: Viewer): Promise<Snapshot>;
  /**
   * The turn's steps on its session, resolved once (tip → owner → live runtime: commands/resolver.ts):
   * its settings, its history, its prompt. `latestSeq` is the seq after the history, when one was written.
   */
  runTurn(caller: Caller, sessionId: string, steps: TurnSteps): Promise<TurnRan>;
  detach(caller: Caller, sessionId: string, viewer: Viewer): Promise<{ detached: boolean }>;
  /** The principal's turn quotas around `start` (principal-quotas.ts): every transport's turn passes here. */
  admitTurn<T>(caller: Caller, bytes: number, start: () => Promise<T>): Promise<T>;
}

const admitAll: Admission = (_caller, start) => start();

export function startTurn(sessions: TurnEntrance, req: TurnRequest): Promise<StartedTurn>;
export function startTurn<T>(sessions: TurnEntrance, req: TurnRequest, then: (turn: StartedTurn) => Promise<T>): Promise<T>;
export function startTurn<T>(sessions: TurnEntrance, req: TurnRequest, then?: (turn: StartedTurn) => Promise<T>): Promise<T | StartedTurn> {
  const { caller, viewer } = req;
  const bytes = req.noInput || req.continue ? 0 : Buffer.byteLength(req.text);
  const admitted = (start: () => Promise<T | StartedTurn>) => sessions.admitTurn(caller, bytes, () => (req.admit ?? admitAll)(caller, start));
  return admitted(async () => {
    let snap: Snapshot | undefined;
    let durable: Promise<void> | undefined;
    try {
      const opened = await open(sessions, req);
      snap = opened?.snapshot;
      durable = opened?.durable;
      // The asked id, not the tip the resume found: the turn resolves it once, and says so in its answer.
      const target = "create" in req.session ? snap!.session_id : req.session.id;
      const ran = await sessions.runTurn(caller, target, {
        // Tools and call options before anything is written: a client tool named like a server tool fails there.
        config: { ...("create" in req.session ? {} : { clientTools: req.clientTools }), callOptions: req.callOptions },
        // On a new session the history joins the row's commit, which the model call does not wait for.
        ...(req.history && req.history.length > 0 ? { history: { messages: req.history, wait: !durable } } : {}),
        text: req.text,
        ...(req.requestId !== undefined ? { requestId: req.requestId } : {}),
        opts: {
          ...(req.noInput || req.continue ? { noInput: true } : {}),
          ...(req.continue ? { continued: true } : {}),
          ...(req.fromMessageId !== undefined ? { fromMessageId: req.fromMessageId } : {}),
          ...(req.trace ? { trace: req.trace } : {}),
          ...(req.parts && req.parts.length > 0 ? { parts: req.parts } : {}),
        },
      });
      const result = ran.result;
      const latestSeq = ran.latestSeq ?? snap?.latest_seq ?? 0;
      if (durable && ran.stored) {
        const both = Promise.all([durable, ran.stored]).then(() => undefined);
        both.catch(() => undefined); // awaited below
        durable = both;
      }
      // A new session's row commits while the turn's model call is on its way: answered once it is stored.
      if (durable) await durable;
      const turn: StartedTurn = {
        result,
        sessionId: snap?.session_id ?? result.session_id ?? target,
        ...(snap ? { opened: { latestSeq, model: snap.model } } : {}),
      };
      return then ? await then(turn) : turn;
    } catch (err) {
      if (viewer && snap) await sessions.detach(caller, snap.session_id, viewer).catch(() => undefined);
      throw err;
    }
  });
}

async function open(sessions: TurnEntrance, req: TurnRequest): Promise<{ snapshot: Snapshot; durable?: Promise<void> } | undefined> {
  const s = req.session;
  if ("create" in s) {
    const create = req.clientTools && req.clientTools.length > 0 ? { ...s.create, client_tools: [...req.clientTools] } : s.create;
    return sessions.createForTurn(req.caller, create, req.viewer);
  }
  return s.resume ? { snapshot: await sessions.resume(req.caller, s.id, req.viewer) } : undefined;
}

