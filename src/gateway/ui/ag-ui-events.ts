/**
 * One run's share of a turn's frames as AG-UI events (`@ag-ui/core` types). A run is one POST: it
 * starts a turn or continues it (tool results, answers to interrupts), and ends where the turn
 * completes, fails, or waits for the client.
 *
 *   frame                          events
 *   (run opens)                    RUN_STARTED, [MESSAGES_SNAPSHOT on a reconnect], STATE_SNAPSHOT
 *   message.delta (assistant)      TEXT_MESSAGE_START (once), TEXT_MESSAGE_CONTENT
 *   reasoning.delta                REASONING_START + REASONING_MESSAGE_START (once), REASONING_MESSAGE_CONTENT
 *   message.complete (assistant)   TEXT_MESSAGE_CONTENT with what the deltas did not carry, *_END
 *   tool.start / request.opened    TOOL_CALL_START, TOOL_CALL_ARGS, TOOL_CALL_END (once per call)
 *   tool.complete                  TOOL_CALL_RESULT
 *   todo.updated, request.*, process.started/exited   STATE_SNAPSHOT { todo, open_requests, processes }
 *   turn.awaiting                  RUN_FINISHED { outcome: interrupt (approvals) | success { pendingToolCallIds } (frontend tools) }
 *   turn.error                     RUN_ERROR { message, code, metadata.tether: { layer, code, retryable } }
 *   turn.complete                  RUN_FINISHED { outcome: success | cancelled (interrupted) }
 *
 * A reconnect opens with the thread's messages as they are stored (MESSAGES_SNAPSHOT, messages
 * still streaming left out) and replays the turn from its start, leaving out what the snapshot
 * showed: the message in flight comes again from TEXT_MESSAGE_START with its text so far — whole,
 * once — then goes on live.
 */
import { EventType as AgEvent, type BaseEvent, type ContentPart as AgContentPart, type Interrupt, type Message as AgMessage } from "@ag-ui/core";
import {
  EventType,
  RequestKind,
  isAttachment,
  type ContentPart,
  type Frame,
  type Message,
  type MessageCompletePayload,
  type MessageDeltaPayload,
  type MessageSnapshot,
  type MessageStartPayload,
  type OpenRequest,
  type ProcessExitedPayload,
  type ProcessInfo,
  type RequestOpenedPayload,
  type RequestResolvedPayload,
  type TodoState,
  type ToolCompletePayload,
  type ToolStartPayload,
  type TurnCompletePayload,
  type TurnErrorPayload,
} from "../../protocol/index.js";
import type { FeedEnd } from "./turn-feed.js";
import { callsOf, TextProgress } from "./turn-reading.js";

/** The thread's state as STATE_SNAPSHOT shows it: Tether's own, read-only to the client. */
export interface TetherUiState {
  todo: TodoState;
  open_requests: OpenRequest[];
  processes: ProcessInfo[];
}

/** The keys of that state: a client may send it back as it got it, nothing else. */
export const STATE_KEYS: readonly string[] = ["todo", "open_requests", "processes"];

export interface AgUiRunOptions {
  threadId: string;
  runId: string;
  turnId: string;
  state: TetherUiState;
  /** A reconnect: the stored messages the run opens with (MESSAGES_SNAPSHOT); the replay leaves them out. */
  snapshot?: AgMessage[];
}

export class AgUiTranslator {
  private readonly text = new TextProgress();
  private readonly assistant = new Set<string>();
  private readonly openText = new Set<string>();
  private readonly openReasoning = new Set<string>();
  /** Message ids, call ids and result call ids the client has. */
  private readonly shownMessages = new Set<string>();
  private readonly shownCalls = new Set<string>();
  private readonly shownResults = new Set<string>();
  private readonly pendingCalls = new Map<string, { name: string; arguments: string; parent: string }>();
  private finished = false;

  constructor(private readonly o: AgUiRunOptions) {
    for (const m of o.snapshot ?? []) {
      this.shownMessages.add(m.id);
      if (m.role === "assistant") for (const c of m.toolCalls ?? []) this.shownCalls.add(c.id);
      if (m.role === "tool") this.shownResults.add(m.toolCallId);
    }
  }

  get done(): boolean {
    return this.finished;
  }

  open(): BaseEvent[] {
    const out: BaseEvent[] = [{ type: AgEvent.RUN_STARTED, threadId: this.o.threadId, runId: this.o.runId } as BaseEvent];
    if (this.o.snapshot) out.push({ type: AgEvent.MESSAGES_SNAPSHOT, messages: this.o.snapshot } as BaseEvent);
    out.push(this.stateSnapshot());
    return out;
  }

  catchup(frames: readonly Frame[], snapshots: readonly MessageSnapshot[]): BaseEvent[] {
    const out: BaseEvent[] = [];
    for (const f of frames) out.push(...this.frame(f, false));
    for (const s of snapshots) {
      if (!this.assistant.has(s.message_id)) continue;
      out.push(...this.reasoning(s.message_id, this.text.growTo(`${s.message_id}:reasoning`, s.reasoning)));
      out.push(...this.content(s.message_id, this.text.growTo(s.message_id, s.text)));
    }
    return out;
  }

  frame(f: Frame, live = true): BaseEvent[] {
    if (this.finished) return [];
    switch (f.type) {
      case EventType.MessageStart: {
        const p = f.payload as MessageStartPayload;
        if (p.role === "assistant" && !this.shownMessages.has(p.message_id)) this.assistant.add(p.message_id);
        return [];
      }
      case EventType.MessageDelta: {
        const p = f.payload as MessageDeltaPayload;
        return live && this.assistant.has(p.message_id) ? this.content(p.message_id, this.text.append(p.message_id, p.text)) : [];
      }
      case EventType.ReasoningDelta: {
        const p = f.payload as MessageDeltaPayload;
        return live && this.assistant.has(p.message_id) ? this.reasoning(p.message_id, this.text.append(`${p.message_id}:reasoning`, p.text)) : [];
      }
      case EventType.MessageComplete:
        return this.messageComplete(f.payload as MessageCompletePayload);
      case EventType.ToolStart:
        return this.showCall((f.payload as ToolStartPayload).call_id, f.payload as ToolStartPayload);
      case EventType.RequestOpened: {
        const p = f.payload as RequestOpenedPayload;
        this.o.state.open_requests = [...this.o.state.open_requests.filter((r) => r.request_id !== p.request_id), { ...p, turn_id: f.turn_id ?? "", created_at: f.ts }];
        return [...(p.call_id ? this.showCall(p.call_id, { name: p.tool ?? "", args: p.args }) : []), this.stateSnapshot()];
      }
      case EventType.RequestResolved: {
        const id = (f.payload as RequestResolvedPayload).request_id;
        this.o.state.open_requests = this.o.state.open_requests.filter((r) => r.request_id !== id);
        return [this.stateSnapshot()];
      }
      case EventType.ToolComplete:
        return this.toolComplete(f.payload as ToolCompletePayload);
      case EventType.TodoUpdated: {
        const { revision, items } = f.payload as TodoState;
        this.o.state.todo = { revision, items };
        return [this.stateSnapshot()];
      }
      case EventType.ProcessStarted: {
        const p = f.payload as ProcessInfo;
        this.o.state.processes = [...this.o.state.processes.filter((x) => x.id !== p.id), p];
        return [this.stateSnapshot()];
      }
      case EventType.ProcessExited: {
        const p = f.payload as ProcessExitedPayload;
        this.o.state.processes = this.o.state.processes.map((x) => (x.id === p.id ? { ...x, ...p } : x));
        return [this.stateSnapshot()];
      }
      case EventType.TurnAwaiting:
        return this.finishAwaiting();
      case EventType.TurnError: {
        const { error } = f.payload as TurnErrorPayload;
        const out = this.closeMessages();
        this.finished = true;
        out.push({ type: AgEvent.RUN_ERROR, message: error.message, code: error.code, metadata: { tether: { layer: error.layer, code: error.code, retryable: error.retryable } } } as BaseEvent);
        return out;
      }
      case EventType.TurnComplete: {
        const p = f.payload as TurnCompletePayload;
        return this.finish(p.status === "complete" ? { type: "success" } : { type: "cancelled" }, { status: p.status, ...(p.stop_reason ? { stop_reason: p.stop_reason } : {}), ...(p.usage ? { usage: p.usage } : {}) });
      }
      case EventType.SessionClosed:
        return this.finish({ type: "cancelled" }, { status: "closed" });
      default:
        return [];
    }
  }

  /** The feed ended without the run's end in it (the session moved, the reader left). */
  close(how: FeedEnd): BaseEvent[] {
    if (this.finished) return [];
    // A thread with no turn yet (a reconnect to a new one): nothing ran, nothing is cut.
    if (this.o.turnId === "") return this.finish({ type: "success" }, { status: "idle" });
    return this.finish({ type: "cancelled" }, { status: how === "gone" ? "unknown" : how });
  }

  private messageComplete(p: MessageCompletePayload): BaseEvent[] {
    if (p.role !== "assistant" || this.shownMessages.has(p.message_id)) return [];
    this.assistant.add(p.message_id);
    const out = this.content(p.message_id, this.text.growTo(p.message_id, p.content));
    out.push(...this.closeMessage(p.message_id));
    for (const c of callsOf(p)) if (!this.shownCalls.has(c.id)) this.pendingCalls.set(c.id, { name: c.name, arguments: c.arguments, parent: p.message_id });
    return out;
  }

  private content(id: string, delta: string): BaseEvent[] {
    if (delta === "") return [];
    const out: BaseEvent[] = [];
    if (!this.openText.has(id)) {
      this.openText.add(id);
      out.push({ type: AgEvent.TEXT_MESSAGE_START, messageId: id, role: "assistant" } as BaseEvent);
    }
    out.push({ type: AgEvent.TEXT_MESSAGE_CONTENT, messageId: id, delta } as BaseEvent);
    return out;
  }

  private reasoning(messageId: string, delta: string): BaseEvent[] {
    if (delta === "") return [];
    const id = `${messageId}:reasoning`;
    const out: BaseEvent[] = [];
    if (!this.openReasoning.has(messageId)) {
      this.openReasoning.add(messageId);
      out.push({ type: AgEvent.REASONING_START, messageId: id } as BaseEvent, { type: AgEvent.REASONING_MESSAGE_START, messageId: id, role: "reasoning" } as BaseEvent);
    }
    out.push({ type: AgEvent.REASONING_MESSAGE_CONTENT, messageId: id, delta } as BaseEvent);
    return out;
  }

  private closeMessage(messageId: string): BaseEvent[] {
    const out: BaseEvent[] = [];
    if (this.openReasoning.delete(messageId)) {
      const id = `${messageId}:reasoning`;
      out.push({ type: AgEvent.REASONING_MESSAGE_END, messageId: id } as BaseEvent, { type: AgEvent.REASONING_END, messageId: id } as BaseEvent);
    }
    if (this.openText.delete(messageId)) out.push({ type: AgEvent.TEXT_MESSAGE_END, messageId } as BaseEvent);
    return out;
  }

  private closeMessages(): BaseEvent[] {
    return [...new Set([...this.openReasoning, ...this.openText])].flatMap((id) => this.closeMessage(id));
  }

  private showCall(callId: string, fallback: { name: string; args: unknown }): BaseEvent[] {
    if (this.shownCalls.has(callId)) return [];
    this.shownCalls.add(callId);
    const pending = this.pendingCalls.get(callId);
    this.pendingCalls.delete(callId);
    const name = pending?.name ?? fallback.name;
    const args = pending?.arguments ?? JSON.stringify(fallback.args ?? {});
    return [
      { type: AgEvent.TOOL_CALL_START, toolCallId: callId, toolCallName: name, ...(pending ? { parentMessageId: pending.parent } : {}) } as BaseEvent,
      { type: AgEvent.TOOL_CALL_ARGS, toolCallId: callId, delta: args } as BaseEvent,
      { type: AgEvent.TOOL_CALL_END, toolCallId: callId } as BaseEvent,
    ];
  }

  private toolComplete(p: ToolCompletePayload): BaseEvent[] {
    const out = this.showCall(p.call_id, { name: p.name, args: {} });
    if (this.shownResults.has(p.call_id)) return out;
    this.shownResults.add(p.call_id);
    const content = p.error !== undefined ? p.error : typeof p.result === "string" ? p.result : JSON.stringify(p.result ?? null);
    out.push({ type: AgEvent.TOOL_CALL_RESULT, messageId: `result_${p.call_id}`, toolCallId: p.call_id, content, role: "tool" } as BaseEvent);
    return out;
  }

  /** The turn parked: approvals are the run's interrupts; frontend tool calls are left for the client to answer. */
  private finishAwaiting(): BaseEvent[] {
    const waiting = this.o.state.open_requests.filter((r) => r.turn_id === this.o.turnId);
    const approvals = waiting.filter((r) => r.kind === RequestKind.Approval);
    if (approvals.length > 0) {
      const interrupts: Interrupt[] = approvals.map((r) => ({
        id: r.request_id,
        reason: "tool_approval",
        message: `Approve ${r.tool ?? "the tool"}?`,
        ...(r.call_id ? { toolCallId: r.call_id } : {}),
        ...(r.expires_at ? { expiresAt: new Date(r.expires_at).toISOString() } : {}),
        metadata: { tether: { tool: r.tool, args: r.args, choices: r.choices ?? [] } },
      }));
      return this.finish({ type: "interrupt", interrupts }, { status: "awaiting" });
    }
    const pendingToolCallIds = waiting.filter((r) => r.kind === RequestKind.ClientTool && r.call_id).map((r) => r.call_id!);
    return this.finish({ type: "success", pendingToolCallIds }, { status: "awaiting" });
  }

  private finish(outcome: Record<string, unknown>, result: Record<string, unknown>): BaseEvent[] {
    const out: BaseEvent[] = [];
    // Calls no tool.start showed (a turn cut before it ran them) still belong to their message.
    for (const [id, call] of this.pendingCalls) out.push(...this.showCall(id, { name: call.name, args: call.arguments }));
    out.push(...this.closeMessages());
    this.finished = true;
    out.push({ type: AgEvent.RUN_FINISHED, threadId: this.o.threadId, runId: this.o.runId, outcome, result: { turn_id: this.o.turnId, ...result } } as BaseEvent);
    return out;
  }

  private stateSnapshot(): BaseEvent {
    const { todo, open_requests, processes } = this.o.state;
    return { type: AgEvent.STATE_SNAPSHOT, snapshot: { todo, open_requests, processes } } as BaseEvent;
  }
}

/** The stored transcript as AG-UI messages (a reconnect's MESSAGES_SNAPSHOT); messages still streaming are left out. */
/**
 * A stored message's parts as AG-UI content: text, and each attachment a media part whose `url`
 * source is the blob route (`/api/blobs/{sha256}`, relative to the gateway, read with the key) or
 * the https URL it was sent as — references, never bytes.
 */
function agUiContent(parts: readonly ContentPart[]): AgContentPart[] {
  return parts.map((p): AgContentPart => {
    if (p.type === "text") return { type: "text", text: p.text };
    const source = { type: "url" as const, value: p.sha256 !== undefined ? `/api/blobs/${p.sha256}` : (p.url ?? ""), mimeType: p.media_type };
    const metadata = p.type === "file" && p.filename ? { metadata: { filename: p.filename } } : {};
    return { type: p.type === "file" ? "document" : p.type, source, ...metadata };
  });
}

export function agUiMessages(messages: readonly Message[]): AgMessage[] {
  const out: AgMessage[] = [];
  for (const m of messages) {
    if (m.status === "streaming") continue;
    if (m.role === "user") out.push({ id: m.message_id, role: "user", content: m.parts?.some(isAttachment) ? agUiContent(m.parts) : m.content });
    else if (m.role === "assistant") {
      const toolCalls = (m.tool_calls ?? []).map((c) => ({ id: c.id, type: "function" as const, function: { name: c.name, arguments: c.arguments } }));
      out.push({ id: m.message_id, role: "assistant", ...(m.content ? { content: m.content } : {}), ...(toolCalls.length > 0 ? { toolCalls } : {}) });
    } else if (m.role === "tool" && m.tool_call_id) out.push({ id: m.message_id, role: "tool", content: m.content, toolCallId: m.tool_call_id });
    else if (m.role === "system") out.push({ id: m.message_id, role: "system", content: m.content });
  }
  return out;
}
