/**
 * The session `tether chat` is talking to, kept by the SDK's SessionView: it opens (creates or
 * resumes) the session, holds its open requests, running turn and background processes, and
 * sends each line with the idempotent submit (one request_id on every retry, so a line resent
 * after a dropped connection never runs twice). This class prints: streamed frames as they come,
 * requests as they open, and waits for a line's turn to end.
 */
import { EventType, isFrameOf, Method, type Frame, type OpenRequest, type ProcessInfo } from "../protocol/index.js";
import { SessionView, type SubmitRetry, type TetherClient } from "../client/index.js";
import type { PendingAttachment } from "./chat-attach.js";
import { answerOf, describeRequest } from "./chat-requests.js";
import type { ChatRenderer } from "./chat-render.js";
import { TurnWaiter } from "./turn-waiter.js";

export class ChatSession {
  private view: SessionView | undefined;
  private readonly turns = new TurnWaiter();
  /** Requests already printed (a request is asked once, however often the view changes). */
  private readonly shown = new Set<string>();
  /** `/attach`ed files, sent as parts with the next prompt (then cleared). */
  readonly attachments: PendingAttachment[] = [];
  private requestOpened: (() => void) | undefined;

  constructor(
    private readonly client: TetherClient,
    private readonly render: ChatRenderer,
    /** The submit's retry (the SDK's defaults when absent). */
    private readonly retry?: SubmitRetry,
  ) {}

  get sessionId(): string | undefined {
    return this.view?.model?.sessionId;
  }

  /** A turn runs in this session, as the view sees it (ours or another viewer's). */
  get running(): boolean {
    return this.view?.model?.running ?? false;
  }

  /** What the session waits for, oldest first; the next line typed answers the oldest. */
  get requests(): readonly OpenRequest[] {
    return this.view?.getSnapshot().requests ?? [];
  }

  /** The session's background processes, read again from the gateway into the view. */
  async processes(): Promise<readonly ProcessInfo[]> {
    const view = this.requireView();
    await view.refreshProcesses();
    return view.getSnapshot().processes;
  }

  /** Stops background process `id` (SIGTERM, then SIGKILL): it as it ended. */
  killProcess(id: string): Promise<ProcessInfo> {
    return this.requireView().killProcess(id);
  }

  async create(): Promise<void> {
    const created = await this.client.createSession();
    await this.open(created.session_id);
    this.render.info(`session ${created.session_id} (${created.provider}/${created.model}) — /help for commands`);
  }

  async resume(sessionId: string): Promise<void> {
    const snapshot = await this.open(sessionId);
    const from = snapshot.resolved_from ? ` (continued from ${snapshot.resolved_from})` : "";
    this.render.info(`resumed ${snapshot.session_id}${from}: ${snapshot.messages.length} messages`);
    this.render.history(snapshot.messages);
  }

  /** Submits one line and resolves when its turn has ended. */
  async submit(text: string): Promise<void> {
    const view = this.requireView();
    const parts = this.attachments.map((a) => a.part);
    let answer: { turn_id: string; status: string } | undefined;
    let failure: unknown;
    const sent = await view.submit(text, {
      ...(parts.length > 0 ? { parts } : {}),
      onAnswer: (a) => (answer = a),
      onFailed: (err) => (failure = err),
    });
    if (!sent || !answer) {
      // The line is not shown as a pending prompt here: the error is printed instead.
      for (const q of view.getSnapshot().pending) if (q.status === "failed") view.dismissPending(q.requestId);
      throw failure ?? new Error("no live session: /new or /resume ID");
    }
    // Sent: the next prompt starts with none. (A refused submit throws first and keeps them.)
    this.attachments.length = 0;
    if (answer.status === "queued") this.render.info("(queued behind the running turn)");
    await this.waitTurn(answer.turn_id);
  }

  /** Until the turn ends — or it waits for an answer (the next line gives it). */
  private async waitTurn(turnId: string): Promise<void> {
    if (this.requests.length > 0) return;
    await Promise.race([this.turns.wait(turnId), new Promise<void>((resolve) => (this.requestOpened = resolve))]);
    this.requestOpened = undefined;
  }

  /** Answers the oldest open request with a typed line; then waits for the turn again. */
  async answer(line: string): Promise<void> {
    const view = this.requireView();
    const sessionId = this.requireSession();
    const r = this.requests[0];
    if (!r) return;
    const answer = answerOf(r, line);
    if ("error" in answer) {
      this.render.line(answer.error);
      return;
    }
    await this.client.respond(sessionId, r.request_id, answer);
    // Answered: gone from the view now, before its `request.resolved` frame comes.
    view.update((m) => (m.requests = m.requests.filter((x) => x.request_id !== r.request_id)));
    const next = this.requests[0];
    if (next) this.render.line(describeRequest(next));
    else await this.waitTurn(r.turn_id);
  }

  async interrupt(): Promise<void> {
    if (!this.sessionId) return;
    await this.client.call(Method.SessionInterrupt, { session_id: this.sessionId });
  }

  async todo(): Promise<void> {
    this.render.todo(await this.client.call(Method.TodoGet, { session_id: this.requireSession() }));
  }

  detach(): void {
    this.view?.dispose();
    this.view = undefined;
    this.shown.clear();
    this.turns.releaseAll();
  }

  private async open(sessionId: string) {
    this.detach();
    const view = new SessionView(this.client, {
      ...(this.retry ? { retry: this.retry } : {}),
      onFrame: (frame) => this.onFrame(frame),
      onMessageSnapshot: (s) => this.render.snapshot(s),
      onDropped: (id, err) => {
        this.render.line(`session ${id} is gone: ${err.message}`);
        if (this.view === view) this.detach();
      },
      onGap: (reason) => this.render.info(`(some events of this session could not be recovered: ${reason})`),
    });
    this.view = view;
    view.subscribe(() => this.showRequests(view));
    try {
      const snapshot = await view.open(sessionId);
      if (!snapshot) throw new Error(`session ${sessionId} was not opened`);
      return snapshot;
    } catch (err) {
      if (this.view === view) this.detach();
      throw err;
    }
  }

  /** Prints each request the first time the view shows it open (and wakes a line waiting on its turn). */
  private showRequests(view: SessionView): void {
    if (this.view !== view) return;
    let opened = false;
    for (const r of view.getSnapshot().requests) {
      if (this.shown.has(r.request_id)) continue;
      this.shown.add(r.request_id);
      this.render.line(describeRequest(r));
      opened = true;
    }
    if (opened) this.requestOpened?.();
  }

  private onFrame(frame: Frame): void {
    this.render.frame(frame);
    if (isFrameOf(frame, EventType.TurnComplete, EventType.TurnError)) {
      const turnId = frame.turn_id ?? frame.payload.turn_id;
      if (turnId) this.turns.settle(turnId);
    }
  }

  private requireView(): SessionView {
    if (!this.view?.model) throw new Error("no session: /new or /resume ID");
    return this.view;
  }

  private requireSession(): string {
    const id = this.sessionId;
    if (!id) throw new Error("no session: /new or /resume ID");
    return id;
  }
}
