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
 *   (row.after_seq)         response.created (0)
 *   turn.start              response.in_progress (0)
 *   message.start assistant response.output_item.added (0), response.content_part.added (1)
 *   message.delta           response.output_text.delta (0)
 *   message.complete        [response.output_text.delta with text not streamed before (0)],
 *                           response.output_text.done (1), response.content_part.done (2),
 *                           response.output_item.done (3)
 *   turn.complete           response.completed | response.failed | response.incomplete (0)
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
  type TurnCompletePayload,
  type TurnErrorPayload,
  type TurnErrorInfo,
  type Usage,
} from "../../protocol/index.js";
import type { ResponseRow } from "../../sessions/http-support.js";
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
  output: OutputMessage[];
  usage: { input_tokens: number; output_tokens: number; total_tokens: number; input_tokens_details: { cached_tokens: 0 }; output_tokens_details: { reasoning_tokens: 0 } } | null;
  /** OpenAI's shape, `type` included (the AI SDK refuses a failed Response without it). */
  error: { code: string; message: string; type: string; param: null } | null;
  incomplete_details: { reason: string } | null;
  parallel_tool_calls: boolean;
  tool_choice: "auto";
  tools: unknown[];
  temperature: null;
  top_p: null;
  text: { format: { type: "text" } };
  truncation: "disabled";
  /** Tether extension: the session that holds the conversation. */
  session_id: string;
}

export interface ResponseEvent {
  type: string;
  sequence_number: number;
  [key: string]: unknown;
}

interface MessageTrack {
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
  private lastSeq: number | null = null;
  private turnError: TurnErrorInfo | undefined;
  private finished = false;

  constructor(
    private readonly row: ResponseRow,
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
      parallel_tool_calls: true,
      tool_choice: "auto",
      tools: [],
      temperature: null,
      top_p: null,
      text: { format: { type: "text" } },
      truncation: "disabled",
      session_id: row.session_id,
    };
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
    const n = (k: number) => seq * SEQ_STRIDE + k;
    switch (frame.type) {
      case EventType.TurnStart:
        this.response.status = "in_progress";
        return this.keep([{ type: "response.in_progress", sequence_number: n(0), response: this.snapshot() }]);
      case EventType.MessageStart: {
        const p = frame.payload as MessageStartPayload;
        if (p.role !== "assistant") return [];
        const item: OutputMessage = { id: p.message_id, type: "message", role: "assistant", status: "in_progress", content: [] };
        const outputIndex = this.response.output.push(item) - 1;
        this.messages.set(p.message_id, { outputIndex, startSeq: seq, streamed: "", contiguous: true, gapFrom: null });
        item.content.push({ type: "output_text", text: "", annotations: [] });
        return this.keep([
          { type: "response.output_item.added", sequence_number: n(0), output_index: outputIndex, item: { ...item, content: [] } },
          {
            type: "response.content_part.added",
            sequence_number: n(1),
            item_id: p.message_id,
            output_index: outputIndex,
            content_index: 0,
            part: { type: "output_text", text: "", annotations: [] },
          },
        ]);
      }
      case EventType.MessageDelta: {
        const p = frame.payload as MessageDeltaPayload;
        const m = this.messages.get(p.message_id);
        if (!m || !m.contiguous) return [];
        m.streamed += p.text;
        this.response.output[m.outputIndex]!.content[0]!.text = m.streamed;
        return this.keep([this.delta(n(0), p.message_id, m, p.text)]);
      }
      case EventType.MessageComplete: {
        const p = frame.payload as MessageCompletePayload;
        const m = this.messages.get(p.message_id);
        if (!m) return [];
        const item = this.response.output[m.outputIndex]!;
        const events: ResponseEvent[] = [];
        const rest = this.unstreamed(m, p.content);
        if (rest) events.push(this.delta(n(0), p.message_id, m, rest));
        item.content[0]!.text = p.content;
        item.status = p.status === "complete" ? "completed" : "incomplete";
        const base = { item_id: p.message_id, output_index: m.outputIndex, content_index: 0 };
        events.push(
          { type: "response.output_text.done", sequence_number: n(1), ...base, text: p.content, logprobs: [] },
          {
            type: "response.content_part.done",
            sequence_number: n(2),
            ...base,
            part: { type: "output_text", text: p.content, annotations: [] },
          },
          { type: "response.output_item.done", sequence_number: n(3), output_index: m.outputIndex, item: structuredClone(item) },
        );
        this.messages.set(p.message_id, { ...m, contiguous: false, gapFrom: -1 });
        return this.keep(events);
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

  /** Ends a response whose turn will never complete (dropped from the queue, lost with a process). */
  cancelQueued(status: "cancelled" | "incomplete"): void {
    this.finished = true;
    this.response.status = status;
    if (status === "incomplete") this.response.incomplete_details = { reason: "interrupted" };
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
    }
    if (usage) {
      this.response.usage = {
        input_tokens: usage.prompt_tokens,
        output_tokens: usage.completion_tokens,
        total_tokens: usage.total_tokens,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens_details: { reasoning_tokens: 0 },
      };
    }
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
