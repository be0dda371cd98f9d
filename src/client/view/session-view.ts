/**
 * SessionView: one session as an app shows it, kept by the SDK — the transcript (blocks: messages
 * with their parts, streaming text, tool calls, versions), the todo, open requests, background
 * processes, pending (optimistic) prompts, usage, and the link's status. It subscribes before it
 * resumes (no frame between the Snapshot and the answer is lost), re-opens itself after a gap or
 * a suspension, and sends prompts with the idempotent retry.
 *
 *   const view = new SessionView(client);
 *   view.subscribe(() => render(view.getSnapshot()));
 *   await view.open(sessionId);
 *   await view.submit("hello");
 *
 * Background processes come from `process.list` when a session opens (the frames only say what
 * changed) and from `process.started` / `process.exited` / `process.output` frames after it: an
 * app shows them with no poll of its own.
 *
 * `subscribe` / `getSnapshot` fit React's `useSyncExternalStore`: the snapshot is a new object
 * after every change and the same one between changes.
 */
import { Method, type Frame, type MessageSnapshot, type ProcessInfo, type SessionSummary, type Snapshot, type Usage } from "../../protocol/index.js";
import type { ClientStatus } from "../status.js";
import type { TetherClient } from "../tether-client.js";
import { endedModel, isClosedError } from "./ended-session.js";
import { seedProcesses } from "./processes.js";
import { sendPrompt, type SubmitOptions, type SubmitRetry } from "./prompt-submit.js";
import { applyFrame, applyMessageSnapshot, applyTodo } from "./transcript.js";
import { fromSnapshot } from "./transcript-seed.js";
import type { Block, PendingPrompt, SessionModel } from "./transcript-types.js";

export interface SessionViewOptions {
  /** The idempotent submit's retry (attempts, pause, each send's timeout). */
  retry?: SubmitRetry;
  /** Seed background processes from `process.list` when a session opens. @default true */
  processes?: boolean;
  /**
   * What the app's session list knows of an ended session (its title, profile, model), for its
   * read-only view; a promise when the list may still be on its way (an app that resumes first).
   */
  describe?: (sessionId: string) => SessionSummary | undefined | Promise<SessionSummary | undefined>;
  /** Every frame of the open session (`applied`: it changed the view), after it is applied. */
  onFrame?: (frame: Frame, applied: boolean) => void;
  /** A streamed message's text so far, sent after a reconnect (after it is applied). */
  onMessageSnapshot?: (snapshot: MessageSnapshot) => void;
  /** Frames of the session were lost for good (the view opens it again). */
  onGap?: (reason: string) => void;
  /** Each open that succeeded (an app's own, or one the view made after a gap, a suspension or a 4001 on submit). */
  onOpened?: (snapshot: Snapshot) => void;
  /** The subscription was dropped (the session is gone). */
  onDropped?: (sessionId: string, err: Error) => void;
  /** Request ids for prompts. @default crypto.randomUUID() */
  newRequestId?: () => string;
  /** @default setTimeout */
  sleep?: (ms: number) => Promise<void>;
}

/** What `getSnapshot()` returns: a new object after every change. */
export interface SessionViewSnapshot {
  /** The session asked for (set at once by `open`), or the live tip it resolved to. */
  readonly sessionId: string | undefined;
  /** The full model (its blocks are updated in place: compare `version`). */
  readonly model: SessionModel | undefined;
  readonly blocks: readonly Block[];
  readonly pending: readonly PendingPrompt[];
  readonly requests: SessionModel["requests"];
  readonly todo: SessionModel["todo"];
  readonly processes: readonly ProcessInfo[];
  readonly running: boolean;
  readonly state: SessionModel["state"] | undefined;
  /** Token use summed over the finished assistant messages shown. */
  readonly usage: Usage;
  /** The connection's status (`connected` means live and caught up). */
  readonly link: ClientStatus;
  readonly loading: boolean;
  readonly error: Error | undefined;
  /** Bumped on every change. */
  readonly version: number;
}

const EMPTY_TODO: SessionModel["todo"] = { revision: 0, items: [] };

function defaultRequestId(): string {
  const c = globalThis.crypto;
  return typeof c?.randomUUID === "function" ? c.randomUUID() : `req-${Date.now()}-${Math.random().toString(36).slice(2)}`;
}

function totalUsage(usage: Record<string, Usage>): Usage {
  const t: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  for (const u of Object.values(usage)) {
    t.prompt_tokens += u.prompt_tokens;
    t.completion_tokens += u.completion_tokens;
    t.total_tokens += u.total_tokens;
  }
  return t;
}

export class SessionView {
  private current: SessionModel | undefined;
  private wanted: string | undefined;
  private loading = false;
  private failure: Error | undefined;
  private link: ClientStatus;
  private readonly listeners = new Set<() => void>();
  private snapshot: SessionViewSnapshot | undefined;
  private changes = 0;
  private openSeq = 0;
  private unsubscribe: (() => void) | undefined;
  private readonly offStatus: () => void;
  private readonly retry: Required<SubmitRetry>;

  constructor(
    private readonly client: TetherClient,
    private readonly opts: SessionViewOptions = {},
  ) {
    this.link = client.status;
    this.offStatus = client.onStatus((s) => {
      this.link = s;
      this.emit();
    });
    this.retry = { attempts: opts.retry?.attempts ?? 20, delayMs: opts.retry?.delayMs ?? 500, timeoutMs: opts.retry?.timeoutMs ?? 15_000 };
  }

  /** The open session's model (undefined before `open` answers, or after a failure). */
  get model(): SessionModel | undefined {
    return this.current;
  }

  get sessionId(): string | undefined {
    return this.wanted;
  }

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  getSnapshot = (): SessionViewSnapshot => {
    if (this.snapshot) return this.snapshot;
    const m = this.current;
    // Summed when read: the page reads the snapshot on every streamed frame for its flags, and
    // summing a 1,000-reply session's usage each time was a visible part of a frame (#33).
    const byMessage = m?.usage ?? {};
    let usage: Usage | undefined;
    this.snapshot = {
      sessionId: this.wanted,
      model: m,
      blocks: m ? [...m.blocks] : [],
      pending: m ? [...m.pending] : [],
      requests: m ? [...m.requests] : [],
      todo: m?.todo ?? EMPTY_TODO,
      processes: Object.values(m?.processes ?? {}),
      running: m?.running ?? false,
      state: m?.state,
      get usage() {
        return (usage ??= totalUsage(byMessage));
      },
      link: this.link,
      loading: this.loading,
      error: this.failure,
      version: this.changes,
    };
    return this.snapshot;
  };

  /** Tells the subscribers (a change made to `model` from outside, through `update`, too). */
  private emit(): void {
    this.changes++;
    this.snapshot = undefined;
    for (const l of [...this.listeners]) l();
  }

  /** Changes the open model (an app's own edit, e.g. a title it set): bumps its version and tells the subscribers. */
  update(change: (model: SessionModel) => void): void {
    const m = this.current;
    if (!m) return;
    change(m);
    m.version++;
    this.emit();
  }

  /** Shows nothing (a session deleted, or to be opened afresh). */
  reset(): void {
    this.openSeq++;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.current = undefined;
    this.wanted = undefined;
    this.loading = false;
    this.failure = undefined;
    this.emit();
  }

  /** Stops watching (the client stays open). */
  dispose(): void {
    this.reset();
    this.offStatus();
    this.listeners.clear();
  }

  /**
   * Opens `sessionId` (or switches to it): subscribes first, then resumes. Resolves with the
   * Snapshot, or undefined when a later `open` superseded this one. A session closed by a user
   * opens read-only (state `ended`, with its end reason) and the 4010 is thrown; any other
   * failure leaves no model, sets `error` and is thrown.
   */
  async open(sessionId: string): Promise<Snapshot | undefined> {
    const seq = ++this.openSeq;
    this.unsubscribe?.();
    this.wanted = sessionId;
    if (this.current?.sessionId !== sessionId) this.current = undefined;
    this.loading = true;
    this.failure = undefined;
    this.emit();
    const early: Frame[] = [];
    let model: SessionModel | undefined;
    const off = this.listen(sessionId, () => model, early);
    this.unsubscribe = off;
    try {
      const snap = await this.client.resumeSession(sessionId);
      if (seq !== this.openSeq) return undefined;
      model = fromSnapshot(snap, this.current);
      for (const f of early.splice(0)) if ((f.seq ?? 0) > snap.latest_seq) applyFrame(model, f);
      this.current = model;
      this.wanted = snap.session_id;
      if (this.opts.processes !== false) void this.loadProcesses(model);
      this.opts.onOpened?.(snap);
      return snap;
    } catch (err) {
      if (seq !== this.openSeq) return undefined;
      off();
      this.unsubscribe = undefined;
      await this.failed(sessionId, err);
      throw err;
    } finally {
      if (seq === this.openSeq) {
        this.loading = false;
        this.emit();
      }
    }
  }

  private listen(sessionId: string, model: () => SessionModel | undefined, early: Frame[]): () => void {
    const reopen = () => {
      if (this.wanted === sessionId) this.open(sessionId).catch(() => undefined);
    };
    return this.client.subscribe(
      sessionId,
      (frame) => {
        const m = model();
        if (!m) early.push(frame);
        const applied = m ? applyFrame(m, frame) : false;
        this.opts.onFrame?.(frame, applied);
        if (applied) this.emit();
      },
      {
        onSnapshot: (snap) => {
          const m = model();
          if (!m) return;
          applyMessageSnapshot(m, snap);
          this.opts.onMessageSnapshot?.(snap);
          this.emit();
        },
        onDropped: (err) => this.dropped(sessionId, err),
        onSuspended: reopen,
        onGap: (info) => {
          this.opts.onGap?.(info.reason);
          reopen();
        },
      },
    );
  }

  private async failed(sessionId: string, err: unknown): Promise<void> {
    if (isClosedError(err)) {
      this.current = await endedModel(this.client, sessionId, err, await this.opts.describe?.(sessionId));
      return;
    }
    this.current = undefined;
    this.failure = err instanceof Error ? err : new Error(String(err));
  }

  private dropped(sessionId: string, err: Error): void {
    if (this.wanted !== sessionId) return;
    if (isClosedError(err) && this.current) {
      this.current.state = "ended";
      this.current.running = false;
      this.current.version++;
    }
    this.opts.onDropped?.(sessionId, err);
    this.emit();
  }

  private async loadProcesses(model: SessionModel): Promise<void> {
    try {
      await this.seedFromList(model);
    } catch {
      // frames still tell what starts and ends from now on
    }
  }

  /**
   * Reads the open session's background processes again (`process.list`) into the view: for a
   * list a user asked for, which must not miss one the opening's own read has not brought yet.
   */
  async refreshProcesses(): Promise<void> {
    const model = this.current;
    if (model && model.state !== "ended") await this.seedFromList(model);
  }

  private async seedFromList(model: SessionModel): Promise<void> {
    const { processes } = await this.client.call(Method.ProcessList, { session_id: model.sessionId });
    if (this.current !== model) return;
    seedProcesses(model, processes);
    this.emit();
  }

  /**
   * Sends a prompt to the open session: shown at once as pending, sent with one request_id until
   * answered (a send that may have been lost is sent again; it never runs twice). With
   * `replaces`, a new version of that user message (`from_message_id`: an edit, or with
   * `sameText` a regenerate). False when it failed for good (it stays pending as `failed`) or no
   * live session is open.
   */
  async submit(text: string, opts: SubmitOptions = {}): Promise<boolean> {
    const model = this.current;
    if (!model || (!text.trim() && !opts.continues) || model.state === "ended") return false;
    const requestId = (this.opts.newRequestId ?? defaultRequestId)();
    const kind = opts.continues ? { continues: true as const } : opts.replaces ? { replaces: opts.replaces } : {};
    model.pending = [...model.pending, { requestId, text: opts.continues ? "" : text, status: "sending", ...kind }];
    model.version++;
    this.emit();
    const sessionId = model.sessionId;
    return sendPrompt(
      {
        client: this.client,
        retry: this.retry,
        sleep: this.opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))),
        rebind: () => this.open(sessionId),
        changed: () => this.emit(),
      },
      () => (this.current?.sessionId === sessionId ? this.current : model),
      requestId,
      text,
      opts,
    );
  }

  /** Runs the exchange of user message `userKey` again as a new version of it: with `text`, an edit; without, the same prompt. */
  regenerate(userKey: string, text?: string): Promise<boolean> {
    const user = this.current?.blocks.find((b) => b.key === userKey);
    if (!user || user.kind !== "user") return Promise.resolve(false);
    return this.submit(text ?? user.text, { replaces: userKey, ...(text === undefined ? { sameText: true } : {}) });
  }

  /**
   * Continue: the last reply goes on in a turn with no user message (`prompt.submit { continue:
   * true }`), pending (`continues`) until its turn starts; sent as idempotently as any prompt.
   */
  continueReply(): Promise<boolean> {
    return this.submit("", { continues: true });
  }

  /**
   * New text for a queued prompt in its place (`prompt.edit`): the pending entry shows it once the
   * gateway changed it. Answers the gateway's status; `started` or `idle` leave the entry as it was.
   */
  async editQueued(requestId: string, text: string): Promise<"edited" | "started" | "idle"> {
    const model = this.current;
    const q = model?.pending.find((x) => x.requestId === requestId);
    if (!model || !q?.turnId || q.continues || !text.trim()) return "idle";
    const { status } = await this.client.call(Method.PromptEdit, { session_id: model.sessionId, turn_id: q.turnId, text });
    if (status === "edited") this.update((m) => (m.pending = m.pending.map((x) => (x.requestId === requestId ? { ...x, text } : x))));
    return status;
  }

  /** Removes a pending prompt from the view (one that failed, or one cancelled with `prompt.cancel`). */
  dismissPending(requestId: string): void {
    this.update((m) => {
      m.pending = m.pending.filter((q) => q.requestId !== requestId);
    });
  }

  /**
   * Stops background process `id` of the open session (`process.kill`: SIGTERM, SIGKILL after
   * 2 s); resolves with it ended. The view shows that from its `process.exited` frame.
   */
  async killProcess(id: string): Promise<ProcessInfo> {
    const model = this.current;
    if (!model) throw new Error("no session is open");
    return (await this.client.call(Method.ProcessKill, { session_id: model.sessionId, id })).process;
  }

  /** Reads the todo again (`todo.get`): applied only when not older than the one shown. */
  async refreshTodo(): Promise<void> {
    const model = this.current;
    if (!model || model.state === "ended") return;
    if (applyTodo(model, await this.client.call(Method.TodoGet, { session_id: model.sessionId }))) this.emit();
  }
}
