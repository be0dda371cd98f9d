/**
 * Derives a Responses API response — its object and its stream of events — from the session frames
 * of the turn that produces it. Nothing about a response's progress is stored besides the event
 * log, so a stream can be resumed from any process, also after a restart.
 *
 * `sequence_number` = frame seq × 8 + the event's index among the events that frame produces, so
 * numbers are stable however often (and wherever) the stream is rebuilt: strictly increasing, not
 * contiguous. `starting_after=N` replays every event numbered above N.
 *
 *   frame                   events (index)
 *   (row.after_seq)         response.created (0); a continuation (its turn started before it):
 *                           response.in_progress (1), sent with the turn's first frame
 *   turn.start              response.in_progress (0)
 *   message.delta           [response.output_item.added (0), response.content_part.added (1) —
 *                           the message's first text], response.output_text.delta (2)
 *   message.complete        [the same two, if no text came before (0, 1)],
 *                           [response.output_text.delta with text not streamed before (2)],
 *                           response.output_text.done (3), response.content_part.done (4),
 *                           response.output_item.done (5)
 *   request.opened          client_tool: response.output_item.added (0) of a `function_call`,
 *                           response.function_call_arguments.delta (1), …arguments.done (2),
 *                           response.output_item.done (3); approval: an `mcp_approval_request`
 *                           item, added (0) and done (1)
 *   turn.awaiting           response.completed (0) — when it waits for a request this response
 *                           announced (a parked turn waiting again at a reopen goes on)
 *   turn.complete           response.completed | response.failed | response.incomplete (0)
 *
 * A message item opens with its first text, so a step that only calls tools adds no empty message
 * (a client would send it back as an `item_reference`).
 *
 * Deltas are transient: after a restart (or a ring eviction) some are gone. A message whose frames
 * are not contiguous streams no further deltas; the text the client lacks comes as one delta at
 * message.complete — unless the client had already received frames we no longer have, in which
 * case `response.output_text.done` carries the full, authoritative text.
 */
import {
  EventType,
  type Frame,
  type MessageCompletePayload,
  type MessageDeltaPayload,
  type MessageStartPayload,
  RequestKind,
  type RequestOpenedPayload,
  type TurnAwaitingPayload,
  type TurnCompletePayload,
  type TurnErrorPayload,
  type TurnErrorInfo,
  type Usage,
} from "../../protocol/index.js";
import type { ResponseRecord } from "../../sessions/index.js";
import { turnErrorObject } from "./turn-errors.js";

export const SEQ_STRIDE = 8;

export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(["completed", "failed", "incomplete", "cancelled"]);

export interface OutputMessage {
  id: string;
  type: "message";
  role: "assistant";
  status: "in_progress" | "completed" | "incomplete";
  content: Array<{ type: "output_text"; text: string; annotations: unknown[] }>;
}

export interface ResponseObject {
  id: string;
  object: "response";
  created_at: number;
  status: string;
  background: boolean;
  model: string;
  instructions: string | null;
  previous_response_id: string | null;
  store: boolean;
  metadata: Record<string, unknown>;
  output: Array<OutputMessage | ApprovalRequestItem | FunctionCallItem>;
  usage: { input_tokens: number; output_tokens: number; total_tokens: number; input_tokens_details: { cached_tokens: 0 }; output_tokens_details: { reasoning_tokens: 0 } } | null;
  /** OpenAI's shape, `type` included (the AI SDK refuses a failed Response without it). */
  error: { code: string; message: string; type: string; param: null } | null;
  incomplete_details: { reason: string } | null;
  /** What the request asked, echoed as sent (responses-params.ts; OpenAI's defaults where it asked nothing). */
  parallel_tool_calls: boolean;
  tool_choice: unknown;
  tools: unknown[];
  temperature: number | null;
  top_p: number | null;
  max_output_tokens: number | null;
  text: unknown;
  truncation: string;
  reasoning: unknown;
  user?: string;
  service_tier?: string;
  prompt_cache_key?: string;
  safety_identifier?: string;
  /** Tether extension: the session that holds the conversation. */
  session_id: string;
}

/** What a Response shows of a request that asked nothing (and of rows stored before the echo was). */
const DEFAULT_ECHO = {
  parallel_tool_calls: true,
  tool_choice: "auto",
  tools: [],
  temperature: null,
  top_p: null,
  max_output_tokens: null,
  text: { format: { type: "text" } },
  truncation: "disabled",
  reasoning: null,
};

export interface ResponseEvent {
  type: string;
  sequence_number: number;
  [key: string]: unknown;
}

/** OpenAI's `function_call` item: a call of a client tool, answered by a `function_call_output` input item. */
export interface FunctionCallItem {
  id: string;
  type: "function_call";
  status: "completed";
  call_id: string;
  name: string;
  arguments: string;
}

/** OpenAI's `mcp_approval_request` item: answered by an `mcp_approval_response` input item. */
export interface ApprovalRequestItem {
  id: string;
  type: "mcp_approval_request";
  server_label: string;
  name: string;
  arguments: string;
}

interface MessageTrack {
  /** -1 until the message's first text opened its item. */
  outputIndex: number;
  startSeq: number;
  /** Text of the deltas we have, in order, while the frames stayed contiguous. */
  streamed: string;
  contiguous: boolean;
  /** The first seq we lack (set when contiguity broke). */
  gapFrom: number | null;
}

export class ResponseBuilder {
  readonly response: ResponseObject;
  private readonly messages = new Map<string, MessageTrack>();
  /** Call id → the model's arguments text (from the `message.complete` that made the call). */
  private readonly callArgs = new Map<string, string>();
  private lastSeq: number | null = null;
  /** Requests this response announced (`request.opened` after its start): a `turn.awaiting` on one of them ends it. */
  private readonly opened = new Set<string>();
  /** `response.in_progress` was emitted (at `turn.start`, or before a continuation's first event). */
  private inProgress = false;
  private turnError: TurnErrorInfo | undefined;
  private finished = false;
  /** The turn ended interrupted, and the response reads `incomplete` because no cancel was asked for. */
  private interruptedUncancelled = false;
  /** Summed over this response's model calls: a response that ends on calls the client runs has no `turn.complete` usage. */
  private callsUsage: Usage | undefined;

  constructor(
    private readonly row: ResponseRecord,
    /** Events numbered at or below this are not returned (the client has them). */
    private readonly startingAfter = -1,
  ) {
    this.response = {
      id: row.id,
      object: "response",
      created_at: Math.floor(row.created_at / 1000),
      status: row.status === "queued" ? "queued" : "in_progress",
      background: row.background,
      model: row.model,
      instructions: row.instructions,
      previous_response_id: row.previous_response_id,
      store: row.stored,
      metadata: row.metadata ?? {},
      output: [],
      usage: null,
      error: null,
      incomplete_details: null,
      ...DEFAULT_ECHO,
      ...(row.echo ?? {}),
      session_id: row.session_id,
    } as ResponseObject;
  }

  get done(): boolean {
    return this.finished;
  }

  /** The `response.created` event (numbered from the row, before any frame of the turn). */
  created(): ResponseEvent[] {
    const created = { ...this.snapshot(), status: this.row.status === "queued" ? "queued" : "in_progress", output: [] };
    return this.keep([{ type: "response.created", sequence_number: this.row.after_seq * SEQ_STRIDE, response: created }]);
  }

  /** Feeds one session frame (every frame after row.after_seq, in seq order); returns new events. */
  push(frame: Frame): ResponseEvent[] {
    const seq = frame.seq!;
    if (this.lastSeq !== null && seq <= this.lastSeq) return [];
    if (this.lastSeq !== null && seq !== this.lastSeq + 1) {
      for (const m of this.messages.values()) {
        if (m.contiguous && !this.isClosed(m)) {
          m.contiguous = false;
          m.gapFrom = this.lastSeq + 1;
        }
      }
    }
    this.lastSeq = seq;
    if (frame.turn_id !== this.row.turn_id || this.finished) return [];
    if (frame.type === EventType.TurnStart) {
      this.inProgress = true;
      this.response.status = "in_progress";
      return this.keep([{ type: "response.in_progress", sequence_number: seq * SEQ_STRIDE, response: this.snapshot() }]);
    }
    // A continuation (tool outputs, approvals) goes on with a turn that started before it: it is
    // in progress from its first frame, announced right after `response.created`.
    const opening = this.inProgress ? [] : this.continuationInProgress();
    const events = this.turnEvents(frame, seq);
    return opening.length > 0 ? [...this.keep(opening), ...events] : events;
  }

  private continuationInProgress(): ResponseEvent[] {
    this.inProgress = true;
    this.response.status = "in_progress";
    return [{ type: "response.in_progress", sequence_number: this.row.after_seq * SEQ_STRIDE + 1, response: this.snapshot() }];
  }

  /** The events of one frame of this response's turn (not its `turn.start`). */
  private turnEvents(frame: Frame, seq: number): ResponseEvent[] {
    const n = (k: number) => seq * SEQ_STRIDE + k;
    switch (frame.type) {
      case EventType.MessageStart: {
        const p = frame.payload as MessageStartPayload;
        if (p.role !== "assistant") return [];
        this.messages.set(p.message_id, { outputIndex: -1, startSeq: seq, streamed: "", contiguous: true, gapFrom: null });
        return [];
      }
      case EventType.MessageDelta: {
        const p = frame.payload as MessageDeltaPayload;
        const m = this.messages.get(p.message_id);
        if (!m || !m.contiguous) return [];
        const events = this.openMessage(p.message_id, m, n);
        m.streamed += p.text;
        (this.response.output[m.outputIndex] as OutputMessage).content[0]!.text = m.streamed;
        events.push(this.delta(n(2), p.message_id, m, p.text));
        return this.keep(events);
      }
      case EventType.MessageComplete:
        return this.keep(this.completeMessage(frame.payload as MessageCompletePayload, n));
      case EventType.RequestOpened: {
        // An approval the turn waits for is OpenAI's `mcp_approval_request` output item; a client
        // tool's call its `function_call` item.
        const p = frame.payload as RequestOpenedPayload;
        if (p.kind === RequestKind.ClientTool || p.kind === RequestKind.Approval) this.opened.add(p.request_id);
        if (p.kind === RequestKind.ClientTool) return this.keep(this.functionCall(p, n));
        if (p.kind !== RequestKind.Approval) return [];
        const server = p.server ?? "tether";
        const name = p.server && p.tool?.startsWith(`${p.server}__`) ? p.tool.slice(p.server.length + 2) : (p.tool ?? "");
        const item: ApprovalRequestItem = { id: p.request_id, type: "mcp_approval_request", server_label: server, name, arguments: JSON.stringify(p.args ?? {}) };
        const outputIndex = this.response.output.push(item) - 1;
        return this.keep([
          { type: "response.output_item.added", sequence_number: n(0), output_index: outputIndex, item },
          { type: "response.output_item.done", sequence_number: n(1), output_index: outputIndex, item },
        ]);
      }
      case EventType.TurnAwaiting: {
        // The turn waits for requests this response announced: it is complete; a next one answers
        // them. A turn that waits again for requests announced before (a parked turn picked up
        // when its session reopened after a reap or a restart, as the continuation answering them
        // begins) goes on here: their answers are on their way.
        const p = frame.payload as TurnAwaitingPayload;
        if (!p.request_ids.some((id) => this.opened.has(id))) return [];
        this.finished = true;
        this.response.status = "completed";
        if (this.callsUsage) this.setUsage(this.callsUsage);
        return this.keep([{ type: "response.completed", sequence_number: n(0), response: this.snapshot() }]);
      }
      case EventType.TurnError:
        this.turnError = (frame.payload as TurnErrorPayload).error;
        return [];
      case EventType.TurnComplete: {
        const p = frame.payload as TurnCompletePayload;
        this.finish(p.status, p.usage);
        const type =
          this.response.status === "completed"
            ? "response.completed"
            : this.response.status === "failed"
              ? "response.failed"
              : "response.incomplete";
        return this.keep([{ type, sequence_number: n(0), response: this.snapshot() }]);
      }
      default:
        return [];
    }
  }

  /** The message's item, added with its first text (or at its end): the two opening events, numbered 0 and 1. */
  private openMessage(id: string, m: MessageTrack, n: (k: number) => number): ResponseEvent[] {
    if (m.outputIndex >= 0) return [];
    const item: OutputMessage = { id, type: "message", role: "assistant", status: "in_progress", content: [] };
    m.outputIndex = this.response.output.push(item) - 1;
    item.content.push({ type: "output_text", text: "", annotations: [] });
    return [
      { type: "response.output_item.added", sequence_number: n(0), output_index: m.outputIndex, item: { ...item, content: [] } },
      {
        type: "response.content_part.added",
        sequence_number: n(1),
        item_id: id,
        output_index: m.outputIndex,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [] },
      },
    ];
  }

  private completeMessage(p: MessageCompletePayload, n: (k: number) => number): ResponseEvent[] {
    for (const c of p.tool_calls ?? []) this.callArgs.set(c.id, c.arguments);
    if (p.usage) this.callsUsage = addUsage(this.callsUsage, p.usage);
    const m = this.messages.get(p.message_id);
    if (!m) return [];
    // A step that only called tools: no message item (its calls are items of their own).
    if (m.outputIndex < 0 && p.content === "" && (p.tool_calls?.length ?? 0) > 0) {
      this.messages.delete(p.message_id);
      return [];
    }
    const events = this.openMessage(p.message_id, m, n);
    const item = this.response.output[m.outputIndex] as OutputMessage;
    const rest = this.unstreamed(m, p.content);
    if (rest) events.push(this.delta(n(2), p.message_id, m, rest));
    item.content[0]!.text = p.content;
    item.status = p.status === "complete" ? "completed" : "incomplete";
    const base = { item_id: p.message_id, output_index: m.outputIndex, content_index: 0 };
    events.push(
      { type: "response.output_text.done", sequence_number: n(3), ...base, text: p.content, logprobs: [] },
      { type: "response.content_part.done", sequence_number: n(4), ...base, part: { type: "output_text", text: p.content, annotations: [] } },
      { type: "response.output_item.done", sequence_number: n(5), output_index: m.outputIndex, item: structuredClone(item) },
    );
    this.messages.set(p.message_id, { ...m, contiguous: false, gapFrom: -1 });
    return events;
  }

  /** A client tool's call: its `function_call` item, with the arguments streamed in one delta. */
  private functionCall(p: RequestOpenedPayload, n: (k: number) => number): ResponseEvent[] {
    const callId = p.call_id ?? p.request_id;
    const args = this.callArgs.get(callId) ?? JSON.stringify(p.args ?? {});
    const item: FunctionCallItem = { id: `fc_${p.request_id}`, type: "function_call", status: "completed", call_id: callId, name: p.tool ?? "", arguments: args };
    const outputIndex = this.response.output.push(item) - 1;
    const base = { item_id: item.id, output_index: outputIndex };
    return [
      { type: "response.output_item.added", sequence_number: n(0), output_index: outputIndex, item: { ...item, status: "in_progress", arguments: "" } },
      { type: "response.function_call_arguments.delta", sequence_number: n(1), ...base, delta: args },
      { type: "response.function_call_arguments.done", sequence_number: n(2), ...base, name: item.name, arguments: args },
      { type: "response.output_item.done", sequence_number: n(3), output_index: outputIndex, item },
    ];
  }

  /** The terminal event of a response that ended without its turn's end (see `cancelQueued`), after every event so far. */
  endEvent(final: ResponseObject, atLeast = -1): ResponseEvent {
    const type = final.status === "completed" ? "response.completed" : final.status === "failed" ? "response.failed" : "response.incomplete";
    const seq = Math.max(atLeast, ((this.lastSeq ?? this.row.after_seq) + 1) * SEQ_STRIDE);
    return { type, sequence_number: seq, response: final };
  }

  /** Ends a response whose turn will never complete (dropped from the queue, lost with a process). */
  cancelQueued(status: "cancelled" | "incomplete"): void {
    this.finished = true;
    this.response.status = status;
    if (status === "incomplete") this.response.incomplete_details = { reason: "interrupted" };
  }

  /**
   * A cancel was asked for after this builder read its row (by another request or process): an
   * interrupted end then reads as `cancelled`, exactly as if the row had said so at the end.
   */
  cancelRequested(): void {
    if (!this.interruptedUncancelled) return;
    this.interruptedUncancelled = false;
    this.response.status = "cancelled";
    this.response.incomplete_details = null;
  }

  snapshot(): ResponseObject {
    return structuredClone(this.response);
  }

  private finish(status: string, usage: Usage | undefined): void {
    this.finished = true;
    if (status === "complete") this.response.status = "completed";
    else if (status === "error") {
      this.response.status = "failed";
      // The same code and type a chat completion of this failure answers with.
      this.response.error = turnErrorObject(this.turnError);
    } else if (this.row.cancel_requested) this.response.status = "cancelled";
    else {
      this.response.status = "incomplete";
      this.response.incomplete_details = { reason: "interrupted" };
      this.interruptedUncancelled = true;
    }
    if (usage) this.setUsage(usage);
  }

  private setUsage(usage: Usage): void {
    this.response.usage = {
      input_tokens: usage.prompt_tokens,
      output_tokens: usage.completion_tokens,
      total_tokens: usage.total_tokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens_details: { reasoning_tokens: 0 },
    };
  }

  private isClosed(m: MessageTrack): boolean {
    return m.gapFrom === -1;
  }

  /**
   * Text of a completed message the client has not received as deltas: exact while its frames
   * were contiguous; after a gap, all of it if the client saw none of the message, else nothing
   * (the `done` events carry the full text).
   */
  private unstreamed(m: MessageTrack, content: string): string {
    // After a gap the client may hold deltas we no longer have: only if it got none of them do we
    // know what it lacks. (Before the gap, what it got is exactly `streamed`.)
    const clientSawGap = !m.contiguous && m.gapFrom !== null && m.gapFrom * SEQ_STRIDE <= this.startingAfter;
    if (clientSawGap) return "";
    return content.startsWith(m.streamed) ? content.slice(m.streamed.length) : "";
  }

  private delta(sequence: number, itemId: string, m: MessageTrack, text: string): ResponseEvent {
    return {
      type: "response.output_text.delta",
      sequence_number: sequence,
      item_id: itemId,
      output_index: m.outputIndex,
      content_index: 0,
      delta: text,
      logprobs: [],
    };
  }

  private keep(events: ResponseEvent[]): ResponseEvent[] {
    return events.filter((e) => e.sequence_number > this.startingAfter);
  }
}

function addUsage(a: Usage | undefined, b: Usage): Usage {
  if (!a) return { ...b };
  return { prompt_tokens: a.prompt_tokens + b.prompt_tokens, completion_tokens: a.completion_tokens + b.completion_tokens, total_tokens: a.total_tokens + b.total_tokens };
}
