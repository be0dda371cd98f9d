/**
 * One turn's frames as the AI SDK's UI message stream chunks (the `ai` package's `UIMessageChunk`):
 * the turn is one assistant UI message whose id is the turn id, each model call one step.
 *
 *   frame                         chunks
 *   (stream opens)                start { messageId: turn_id }
 *   message.start (assistant)     finish-step (of the step before), start-step
 *   message.delta / reasoning.delta   text-start + text-delta / reasoning-start + reasoning-delta
 *   message.complete (assistant)  text-delta with what the deltas did not carry, text-end, reasoning-end
 *   tool.start                    tool-input-start, tool-input-delta, tool-input-available (providerExecuted)
 *   request.opened approval       (the input chunks), tool-approval-request { approvalId: request_id }
 *   request.opened client_tool    (the input chunks, not providerExecuted: the client's onToolCall runs it)
 *   request.opened input          data-request { id: request_id } (an MCP server asks: answer over HTTP)
 *   tool.complete                 tool-output-available | tool-output-error | tool-output-denied
 *   todo.updated                  data-todo { id: "todo", data: { revision, items } }
 *   turn.error                    message-metadata { tether: { error } }, error { errorText }
 *   turn.awaiting                 finish-step, finish { finishReason: "tool-calls", messageMetadata: { tether: { status: "awaiting" } } }
 *   turn.complete                 finish-step, finish { finishReason, messageMetadata: { tether } }
 *
 * A replay (the catch-up of a resume) takes each message's text from its `message.complete` or its
 * snapshot, so the text a client ends with is the stored text; a client tool the replay shows
 * already answered is marked providerExecuted, so replaying it never runs it again in the client.
 */
import type { UIMessageChunk } from "ai";
import {
  EventType,
  RequestKind,
  type Frame,
  type MessageCompletePayload,
  type MessageDeltaPayload,
  type MessageSnapshot,
  type MessageStartPayload,
  type RequestOpenedPayload,
  type TodoUpdatedPayload,
  type ToolCompletePayload,
  type ToolStartPayload,
  type TurnCompletePayload,
  type TurnErrorPayload,
} from "../../protocol/index.js";
import type { FeedEnd } from "./turn-feed.js";
import { callsOf, completedCalls, parseArgs, TextProgress } from "./turn-reading.js";

type Chunk = UIMessageChunk;

interface CallInfo {
  name: string;
  input: unknown;
  arguments: string;
  /** Shown to the client (its input chunks sent, or it sent the call itself). */
  shown: boolean;
  /** Run by the gateway (or already answered): the client's onToolCall must not run it. */
  providerExecuted: boolean;
  /** The client knew it before this stream (a continuation). */
  known: boolean;
}

export interface ChunkerOptions {
  turnId: string;
  /**
   * Calls the client sent back (a continuation), each with whether the gateway runs it: their
   * input is not sent again, nor the output of a call the client answered itself.
   */
  knownCalls?: ReadonlyMap<string, { providerExecuted: boolean }>;
}

export class UiMessageChunker {
  private readonly text = new TextProgress();
  private readonly assistant = new Set<string>();
  private readonly openText = new Set<string>();
  private readonly openReasoning = new Set<string>();
  private readonly calls = new Map<string, CallInfo>();
  private readonly known: ReadonlyMap<string, { providerExecuted: boolean }>;
  /** Calls whose end the replay batch being read contains. */
  private settled = new Set<string>();
  private stepOpen = false;
  private finished = false;
  private errored = false;

  constructor(private readonly opts: ChunkerOptions) {
    this.known = opts.knownCalls ?? new Map();
  }

  get done(): boolean {
    return this.finished;
  }

  start(): Chunk[] {
    return [{ type: "start", messageId: this.opts.turnId }];
  }

  /** The log's part of the turn: frames (deltas skipped: each text comes whole), then the text of messages still streaming. */
  catchup(frames: readonly Frame[], snapshots: readonly MessageSnapshot[]): Chunk[] {
    this.settled = completedCalls(frames);
    const out: Chunk[] = [];
    for (const f of frames) out.push(...this.frame(f, false));
    for (const s of snapshots) {
      if (!this.assistant.has(s.message_id)) continue;
      out.push(...this.reasoningDelta(s.message_id, this.text.growTo(reasoningId(s.message_id), s.reasoning)));
      out.push(...this.textDelta(s.message_id, this.text.growTo(s.message_id, s.text)));
    }
    this.settled = new Set();
    return out;
  }

  /** One frame of the turn; `live`: as it streams (deltas are sent as they come). */
  frame(f: Frame, live = true): Chunk[] {
    if (this.finished) return [];
    switch (f.type) {
      case EventType.MessageStart:
        return this.messageStart(f.payload as MessageStartPayload);
      case EventType.MessageDelta: {
        const p = f.payload as MessageDeltaPayload;
        return live && this.assistant.has(p.message_id) ? this.textDelta(p.message_id, this.text.append(p.message_id, p.text)) : [];
      }
      case EventType.ReasoningDelta: {
        const p = f.payload as MessageDeltaPayload;
        return live && this.assistant.has(p.message_id) ? this.reasoningDelta(p.message_id, this.text.append(reasoningId(p.message_id), p.text)) : [];
      }
      case EventType.MessageComplete:
        return this.messageComplete(f.payload as MessageCompletePayload);
      case EventType.ToolStart: {
        const p = f.payload as ToolStartPayload;
        return this.showCall(p.call_id, { name: p.name, input: p.args }, true);
      }
      case EventType.RequestOpened:
        return this.requestOpened(f.payload as RequestOpenedPayload);
      case EventType.ToolComplete:
        return this.toolComplete(f.payload as ToolCompletePayload);
      case EventType.TodoUpdated: {
        const { revision, items } = f.payload as TodoUpdatedPayload;
        return [{ type: "data-todo", id: "todo", data: { revision, items } }];
      }
      case EventType.TurnError: {
        const { error } = f.payload as TurnErrorPayload;
        this.errored = true;
        return [
          { type: "message-metadata", messageMetadata: { tether: { turn_id: this.opts.turnId, error } } },
          { type: "error", errorText: error.message },
        ];
      }
      case EventType.TurnAwaiting:
        return this.finish("tool-calls", { status: "awaiting" });
      case EventType.TurnComplete: {
        const p = f.payload as TurnCompletePayload;
        const reason = p.status === "complete" ? "stop" : p.status === "error" ? "error" : "other";
        return this.finish(reason, { status: p.status, ...(p.stop_reason ? { stop_reason: p.stop_reason } : {}), ...(p.usage ? { usage: p.usage } : {}) });
      }
      case EventType.SessionClosed:
        return this.finish("other", { status: "closed" });
      default:
        return [];
    }
  }

  /** The stream ends without the turn's end in it (the reader left, the session moved): close what is open. */
  end(how: FeedEnd): Chunk[] {
    return this.finished ? [] : this.finish("other", { status: how === "gone" ? "unknown" : how });
  }

  private messageStart(p: MessageStartPayload): Chunk[] {
    if (p.role !== "assistant") return [];
    this.assistant.add(p.message_id);
    const out = this.closeStep();
    out.push({ type: "start-step" });
    this.stepOpen = true;
    return out;
  }

  private messageComplete(p: MessageCompletePayload): Chunk[] {
    if (p.role !== "assistant") return [];
    const out: Chunk[] = [];
    if (!this.assistant.has(p.message_id)) out.push(...this.messageStart({ message_id: p.message_id, role: "assistant" }));
    out.push(...this.textDelta(p.message_id, this.text.growTo(p.message_id, p.content)));
    if (this.openReasoning.delete(p.message_id)) out.push({ type: "reasoning-end", id: reasoningId(p.message_id) });
    if (this.openText.delete(p.message_id)) out.push({ type: "text-end", id: p.message_id });
    for (const c of callsOf(p)) {
      if (this.calls.has(c.id)) continue;
      const known = this.known.get(c.id);
      this.calls.set(c.id, { name: c.name, input: c.input, arguments: c.arguments, shown: !!known, providerExecuted: known?.providerExecuted ?? true, known: !!known });
    }
    return out;
  }

  private textDelta(id: string, delta: string): Chunk[] {
    if (delta === "") return [];
    const out: Chunk[] = [];
    if (!this.openText.has(id)) {
      this.openText.add(id);
      out.push({ type: "text-start", id });
    }
    out.push({ type: "text-delta", id, delta });
    return out;
  }

  private reasoningDelta(messageId: string, delta: string): Chunk[] {
    if (delta === "") return [];
    const id = reasoningId(messageId);
    const out: Chunk[] = [];
    if (!this.openReasoning.has(messageId)) {
      this.openReasoning.add(messageId);
      out.push({ type: "reasoning-start", id });
    }
    out.push({ type: "reasoning-delta", id, delta });
    return out;
  }

  private requestOpened(p: RequestOpenedPayload): Chunk[] {
    if (p.kind === RequestKind.Input || !p.call_id) return [{ type: "data-request", id: p.request_id, data: p }];
    const call = { name: p.tool ?? "", input: p.args };
    if (p.kind === RequestKind.ClientTool) return this.showCall(p.call_id, call, this.settled.has(p.call_id));
    return [...this.showCall(p.call_id, call, true), { type: "tool-approval-request", approvalId: p.request_id, toolCallId: p.call_id }];
  }

  /** The input chunks of a call, once: what the model called, and whether the gateway runs it. */
  private showCall(callId: string, fallback: { name: string; input: unknown }, providerExecuted: boolean): Chunk[] {
    let call = this.calls.get(callId);
    if (!call) {
      const known = this.known.get(callId);
      call = {
        name: fallback.name,
        input: fallback.input,
        arguments: JSON.stringify(fallback.input ?? {}),
        shown: !!known,
        providerExecuted: known?.providerExecuted ?? providerExecuted,
        known: !!known,
      };
      this.calls.set(callId, call);
    }
    if (call.shown) return [];
    call.shown = true;
    call.providerExecuted = providerExecuted;
    const pe = providerExecuted ? { providerExecuted: true } : {};
    return [
      { type: "tool-input-start", toolCallId: callId, toolName: call.name, ...pe },
      { type: "tool-input-delta", toolCallId: callId, inputTextDelta: call.arguments },
      { type: "tool-input-available", toolCallId: callId, toolName: call.name, input: call.input ?? parseArgs(call.arguments), ...pe },
    ];
  }

  private toolComplete(p: ToolCompletePayload): Chunk[] {
    const out = this.showCall(p.call_id, { name: p.name, input: undefined }, true);
    const call = this.calls.get(p.call_id)!;
    // The client answered this call itself and holds its output.
    if (call.known && !call.providerExecuted) return out;
    const pe = call.providerExecuted ? { providerExecuted: true } : {};
    if (p.error_info?.code === "denied") out.push({ type: "tool-output-denied", toolCallId: p.call_id });
    else if (p.error !== undefined) out.push({ type: "tool-output-error", toolCallId: p.call_id, errorText: p.error, ...pe });
    else out.push({ type: "tool-output-available", toolCallId: p.call_id, output: p.result ?? null, ...pe });
    return out;
  }

  private closeStep(): Chunk[] {
    const out: Chunk[] = [];
    for (const id of this.openReasoning) out.push({ type: "reasoning-end", id: reasoningId(id) });
    for (const id of this.openText) out.push({ type: "text-end", id });
    this.openReasoning.clear();
    this.openText.clear();
    if (this.stepOpen) out.push({ type: "finish-step" });
    this.stepOpen = false;
    return out;
  }

  private finish(finishReason: "stop" | "error" | "other" | "tool-calls", tether: Record<string, unknown> = {}): Chunk[] {
    const out: Chunk[] = [];
    // Calls no tool.start showed (a turn cut before it ran them): shown as the gateway's, without output.
    for (const [id, call] of this.calls) if (!call.shown) out.push(...this.showCall(id, call, true));
    out.push(...this.closeStep());
    this.finished = true;
    out.push({ type: "finish", finishReason, messageMetadata: { tether: { turn_id: this.opts.turnId, ...tether, ...(this.errored ? { errored: true } : {}) } } });
    return out;
  }
}

function reasoningId(messageId: string): string {
  return `${messageId}:reasoning`;
}
