/**
 * A Tether session as ACP `session/update` notifications (`@agentclientprotocol/sdk` types): its
 * stored transcript, replayed when an editor loads the session, and its live frames after that.
 *
 *   frame / stored message           update
 *   user message (another surface's) user_message_chunk (its attachments: resource_link chunks, below)
 *   message.delta (assistant)        agent_message_chunk (message.complete: what the deltas did not carry)
 *   reasoning.delta                  agent_thought_chunk
 *   tool.start                       tool_call { status: in_progress } (tool_call_update when announced already)
 *   request.opened (approval)        tool_call { status: pending } — then session/request_permission
 *   tool.complete                    tool_call_update { status: completed | failed, rawOutput, content }
 *   todo.updated / the todo          plan { entries }
 *
 * A user message's attachments follow its text as `resource_link` chunks of the same message: the
 * blob's URL on the gateway (`GET /api/blobs/{sha256}`, the key's to read) or the https URL it was
 * sent as, with its name, media type and size — the editor shows what was attached, never bytes.
 */
import type { ContentBlock, PlanEntry, SessionUpdate, ToolKind } from "@agentclientprotocol/sdk";
import {
  EventType,
  isEventFrame,
  type Frame,
  type Message,
  type MessageCompletePayload,
  type MessageDeltaPayload,
  type MessageSnapshot,
  type MessageStartPayload,
  type ContentPart,
  type RequestOpenedPayload,
  type TodoState,
  type ToolCompletePayload,
  type ToolStartPayload,
} from "../../protocol/index.js";

const text = (t: string): ContentBlock => ({ type: "text", text: t });

/** A stored message's attachments as resource links (`blobBase`: the gateway's HTTP base URL). */
function attachmentLinks(parts: readonly ContentPart[] | undefined, blobBase: string): ContentBlock[] {
  return (parts ?? []).flatMap((p): ContentBlock[] => {
    if (p.type === "text") return [];
    const uri = p.sha256 !== undefined ? `${blobBase}/api/blobs/${p.sha256}` : (p.url ?? "");
    const name = p.type === "file" && p.filename ? p.filename : `${p.type} ${p.media_type}`;
    return [{ type: "resource_link", uri, name, mimeType: p.media_type, ...(p.size !== undefined ? { size: p.size } : {}) }];
  });
}

/** What kind of tool a Tether tool is, as an editor shows it. */
export function toolKind(name: string): ToolKind {
  if (name === "read_file" || name === "list_dir" || name === "editor_read_text_file") return "read";
  if (name === "write_file" || name === "edit_file" || name === "editor_write_text_file") return "edit";
  if (name === "search_files") return "search";
  if (name === "terminal" || name.startsWith("process_")) return "execute";
  if (name === "todo") return "think";
  return "other";
}

export function planOf(todo: TodoState): SessionUpdate {
  const entries: PlanEntry[] = todo.items.map((i) => ({ content: i.content, priority: "medium", status: i.status }));
  return { sessionUpdate: "plan", entries };
}

function resultText(result: unknown, error: string | undefined): string {
  if (error !== undefined) return error;
  return typeof result === "string" ? result : JSON.stringify(result ?? null);
}

/** A session's frames as updates, each piece of text once. */
export class AcpUpdates {
  private readonly sent = new Map<string, string>();
  private readonly assistant = new Set<string>();
  private readonly announced = new Set<string>();
  /** Prompts this connection sent: their user messages are the editor's own, not echoed. */
  private readonly ownPrompts: string[] = [];

  /** `blobBase`: the gateway's HTTP base URL, where an attachment's link points. */
  constructor(private readonly blobBase = "") {}

  private userChunks(id: string, content: string, parts: readonly ContentPart[] | undefined): SessionUpdate[] {
    const blocks = [...(content ? [text(content)] : []), ...attachmentLinks(parts, this.blobBase)];
    return (blocks.length > 0 ? blocks : [text(content)]).map((c) => ({ sessionUpdate: "user_message_chunk", content: c, messageId: id }));
  }

  /** A prompt the editor sent: its user message is not echoed back. */
  ownPrompt(prompt: string): void {
    this.ownPrompts.push(prompt);
  }

  /** The stored transcript (a load), then the todo as a plan; streaming text is marked sent. */
  transcript(messages: readonly Message[], todo: TodoState): SessionUpdate[] {
    const out: SessionUpdate[] = [];
    for (const m of messages) {
      if (m.role === "user") out.push(...this.userChunks(m.message_id, m.content, m.parts));
      else if (m.role === "assistant") {
        this.assistant.add(m.message_id);
        if (m.content) out.push(this.chunk(m.message_id, m.content));
        this.sent.set(m.message_id, m.content);
        for (const c of m.tool_calls ?? []) out.push(this.announce(c.id, c.name, safeParse(c.arguments), "in_progress"));
      } else if (m.role === "tool" && m.tool_call_id) {
        out.push({ sessionUpdate: "tool_call_update", toolCallId: m.tool_call_id, status: "completed", rawOutput: m.content, content: [{ type: "content", content: text(m.content) }] });
      }
    }
    if (todo.items.length > 0) out.push(planOf(todo));
    return out;
  }

  frame(f: Frame): SessionUpdate[] {
    if (!isEventFrame(f)) return [];
    switch (f.type) {
      case EventType.MessageStart: {
        const p = f.payload;
        if (p.role === "assistant") this.assistant.add(p.message_id);
        return [];
      }
      case EventType.MessageDelta: {
        const p = f.payload;
        if (!this.assistant.has(p.message_id) || p.text === "") return [];
        this.sent.set(p.message_id, (this.sent.get(p.message_id) ?? "") + p.text);
        return [this.chunk(p.message_id, p.text)];
      }
      case EventType.ReasoningDelta: {
        const p = f.payload;
        return this.assistant.has(p.message_id) && p.text ? [{ sessionUpdate: "agent_thought_chunk", content: text(p.text), messageId: p.message_id }] : [];
      }
      case EventType.MessageComplete:
        return this.messageComplete(f.payload);
      case EventType.ToolStart: {
        const p = f.payload;
        if (this.announced.has(p.call_id)) return [{ sessionUpdate: "tool_call_update", toolCallId: p.call_id, status: "in_progress" }];
        return [this.announce(p.call_id, p.name, p.args, "in_progress")];
      }
      case EventType.RequestOpened: {
        const p = f.payload;
        return p.call_id && !this.announced.has(p.call_id) ? [this.announce(p.call_id, p.tool ?? "", p.args, "pending")] : [];
      }
      case EventType.ToolComplete: {
        const p = f.payload;
        const out = this.announced.has(p.call_id) ? [] : [this.announce(p.call_id, p.name, undefined, "in_progress")];
        const body = resultText(p.result, p.error);
        out.push({ sessionUpdate: "tool_call_update", toolCallId: p.call_id, status: p.error !== undefined ? "failed" : "completed", rawOutput: p.error !== undefined ? { error: p.error } : p.result, content: [{ type: "content", content: text(body) }] });
        return out;
      }
      case EventType.TodoUpdated:
        return [planOf(f.payload)];
      default:
        return [];
    }
  }

  /** The text so far of a message whose deltas were missed (a reconnect of the SDK client): the rest of it. */
  snapshot(s: MessageSnapshot): SessionUpdate[] {
    this.assistant.add(s.message_id);
    return this.grow(s.message_id, s.text);
  }

  private messageComplete(p: MessageCompletePayload): SessionUpdate[] {
    if (p.role === "user") {
      const own = this.ownPrompts.indexOf(p.content);
      if (own >= 0) {
        this.ownPrompts.splice(own, 1);
        return [];
      }
      return this.userChunks(p.message_id, p.content, p.parts);
    }
    if (p.role !== "assistant") return [];
    this.assistant.add(p.message_id);
    return this.grow(p.message_id, p.content);
  }

  private grow(id: string, whole: string): SessionUpdate[] {
    const before = this.sent.get(id) ?? "";
    if (whole.length <= before.length || !whole.startsWith(before)) return [];
    this.sent.set(id, whole);
    return [this.chunk(id, whole.slice(before.length))];
  }

  private chunk(id: string, t: string): SessionUpdate {
    return { sessionUpdate: "agent_message_chunk", content: text(t), messageId: id };
  }

  private announce(callId: string, name: string, input: unknown, status: "pending" | "in_progress"): SessionUpdate {
    this.announced.add(callId);
    return { sessionUpdate: "tool_call", toolCallId: callId, title: name, kind: toolKind(name), status, ...(input !== undefined ? { rawInput: input } : {}) };
  }
}

function safeParse(args: string): unknown {
  try {
    return JSON.parse(args === "" ? "{}" : args);
  } catch {
    return args;
  }
}
