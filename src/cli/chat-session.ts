/**
 * The session `tether chat` is talking to: create/resume, the subscription that feeds the
 * renderer, submitting a line and waiting for its turn, interrupting it.
 */
import { randomUUID } from "node:crypto";
import { EventType, isFrameOf, Method, type Frame, type Snapshot } from "../protocol/index.js";
import { OpenRequests, type TetherClient } from "../client/index.js";
import type { PendingAttachment } from "./chat-attach.js";
import { answerOf, describeRequest } from "./chat-requests.js";
import type { ChatRenderer } from "./chat-render.js";
import { TurnWaiter } from "./turn-waiter.js";

export class ChatSession {
  sessionId: string | undefined;
  /** The turn running in this session, as seen from its frames (ours or another viewer's). */
  runningTurn: string | undefined;
  private unsubscribe: (() => void) | undefined;
  private readonly turns = new TurnWaiter();
  /** What the session waits for; the next line typed answers the oldest. */
  readonly requests = new OpenRequests();
  /** `/attach`ed files, sent as parts with the next prompt (then cleared). */
  readonly attachments: PendingAttachment[] = [];
  private requestOpened: (() => void) | undefined;

  constructor(
    private readonly client: TetherClient,
    private readonly render: ChatRenderer,
  ) {}

  async create(): Promise<void> {
    const snapshot = await this.client.createSession();
    this.attach(snapshot);
    this.render.info(`session ${snapshot.session_id} (${snapshot.provider}/${snapshot.model}) — /help for commands`);
  }

  async resume(sessionId: string): Promise<void> {
    const snapshot = await this.client.resumeSession(sessionId);
    this.attach(snapshot);
    const from = snapshot.resolved_from ? ` (continued from ${snapshot.resolved_from})` : "";
    this.render.info(`resumed ${snapshot.session_id}${from}: ${snapshot.messages.length} messages`);
    this.render.history(snapshot.messages);
  }

  /** Submits one line and resolves when its turn has ended. */
  async submit(text: string): Promise<void> {
    const sessionId = this.requireSession();
    // A fresh request_id per line: if this submit is retried after a drop, the server answers
    // `duplicate` instead of running the turn twice.
    const parts = this.attachments.map((a) => a.part);
    const answer = await this.client.call(Method.PromptSubmit, {
      session_id: sessionId,
      text,
      request_id: randomUUID(),
      ...(parts.length > 0 ? { parts } : {}),
    });
    // Sent: the next prompt starts with none. (A refused submit throws first and keeps them.)
    this.attachments.length = 0;
    if (answer.status === "queued") this.render.info("(queued behind the running turn)");
    this.runningTurn ??= answer.turn_id;
    await this.waitTurn(answer.turn_id);
  }

  /** Until the turn ends — or it waits for an answer (the next line gives it). */
  private async waitTurn(turnId: string): Promise<void> {
    if (this.requests.size > 0) return;
    await Promise.race([this.turns.wait(turnId), new Promise<void>((resolve) => (this.requestOpened = resolve))]);
    this.requestOpened = undefined;
  }

  /** Answers the oldest open request with a typed line; then waits for the turn again. */
  async answer(line: string): Promise<void> {
    const sessionId = this.requireSession();
    const r = this.requests.list()[0];
    if (!r) return;
    const answer = answerOf(r, line);
    if ("error" in answer) {
      this.render.line(answer.error);
      return;
    }
    await this.client.respond(sessionId, r.request_id, answer);
    this.requests.apply({ type: "request.resolved", session_id: sessionId, epoch: "", ts: 0, payload: { request_id: r.request_id, by: "" } });
    const next = this.requests.list()[0];
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
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.runningTurn = undefined;
    this.turns.releaseAll();
  }

  private attach(snapshot: Snapshot): void {
    this.detach();
    this.sessionId = snapshot.session_id;
    this.requests.reset(snapshot.open_requests);
    for (const r of this.requests.list()) this.render.line(describeRequest(r));
    this.unsubscribe = this.client.subscribe(snapshot.session_id, (frame) => this.onFrame(frame), {
      onSnapshot: (s) => this.render.snapshot(s),
      onDropped: (err) => {
        this.render.line(`session ${snapshot.session_id} is gone: ${err.message}`);
        this.sessionId = undefined;
        this.detach();
      },
      onGap: (info) => this.render.info(`(some events of this session could not be recovered: ${info.reason})`),
    });
  }

  private onFrame(frame: Frame): void {
    if (frame.session_id !== this.sessionId) return;
    this.render.frame(frame);
    const opened = this.requests.apply(frame);
    if (opened) {
      this.render.line(describeRequest(opened));
      this.requestOpened?.();
    }
    if (frame.type === EventType.TurnStart && frame.turn_id) this.runningTurn = frame.turn_id;
    if (isFrameOf(frame, EventType.TurnComplete, EventType.TurnError)) {
      const turnId = frame.turn_id ?? frame.payload.turn_id;
      if (turnId === this.runningTurn) this.runningTurn = undefined;
      if (turnId) this.turns.settle(turnId);
    }
  }

  private requireSession(): string {
    if (!this.sessionId) throw new Error("no session: /new or /resume ID");
    return this.sessionId;
  }
}
