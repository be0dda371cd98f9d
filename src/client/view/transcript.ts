/**
 * The transcript reducer: a SessionModel (transcript-seed.ts builds it from a Snapshot) kept up to
 * date by frames, in seq order, each once (the SDK guarantees that). The rules that make that
 * guarantee visible live here, in one place:
 *
 * - every block has a stable key (message_id, call_id, turn_id): a frame or snapshot that names
 *   a block already shown updates it in place, it never adds a second one;
 * - `message.complete` carries the authoritative text; a MessageSnapshot replaces the text of a
 *   message whose deltas were missed;
 * - the todo list only moves forward: a lower revision than the one shown is ignored;
 * - branching: `branch.created` / `branch.switched` cut the active branch where it left and
 *   (switched) seed the branch shown again.
 *
 * Frames are the protocol's typed union (`EventFrame`): each case reads its own payload, no cast.
 */
import { isAttachment, isEventFrame } from "../../protocol/index.js";
import type { EventFrame, Frame, FrameOf, MessageSnapshot, TodoItem } from "../../protocol/index.js";
import { delegationProgress, delegationStarted, resultBlock, RESULT_HEAD, settleCard } from "./delegation-cards.js";
import { applyProcessFrame } from "./processes.js";
import { add, assistantBlock, get, getOrAdd, idx, markAwaiting, removeBlock, toolBlock, withInput } from "./transcript-index.js";
import { seedTranscript } from "./transcript-seed.js";
import type { Block, SessionModel, TurnErrorInfo } from "./transcript-types.js";

/** Applies one frame (in seq order). Returns true when something visible changed. */
export function applyFrame(m: SessionModel, frame: Frame): boolean {
  if (!isEventFrame(frame)) return false; // a newer gateway's frame this SDK does not know
  const changed = applyMessageFrame(m, frame) ?? applySessionFrame(m, frame);
  if (changed) m.version++;
  return changed;
}

/** The turn's messages and tool calls; undefined for any other frame. */
function applyMessageFrame(m: SessionModel, frame: EventFrame): boolean | undefined {
  switch (frame.type) {
    case "turn.start": {
      const t = frame.payload;
      m.running = true;
      m.currentTurn = t.turn_id;
      idx(m).turnInputs.set(t.turn_id, t.input);
      idx(m).startedTurns.add(t.turn_id);
      m.pending = m.pending.filter((q) => q.turnId !== t.turn_id);
      return true;
    }
    case "message.start":
      messageStart(m, frame);
      return true;
    case "message.delta":
    case "reasoning.delta": {
      const d = frame.payload;
      const b = getOrAdd(m, d.message_id, "assistant", () => assistantBlock(d.message_id, "", "streaming", frame.turn_id));
      if (frame.type === "message.delta") b.text += d.text;
      else b.reasoning += d.text;
      return true;
    }
    case "message.complete":
      messageComplete(m, frame);
      return true;
    case "tool.start": {
      const t = frame.payload;
      const b = get(m, t.call_id, "tool");
      if (b) b.args = t.args;
      else add(m, { kind: "tool", key: t.call_id, name: t.name, args: t.args, done: false });
      return true;
    }
    case "tool.complete": {
      const t = frame.payload;
      const b = getOrAdd(m, t.call_id, "tool", () => ({ kind: "tool", key: t.call_id, name: t.name, args: undefined, done: false }));
      b.done = true;
      b.result = t.result;
      b.durationMs = t.duration_ms;
      if (t.error !== undefined) b.error = t.error;
      return true;
    }
    case "turn.error": {
      const e = frame.payload;
      const existing = m.blocks.find((b) => b.kind === "error" && b.turnId === e.turn_id);
      if (existing && existing.kind === "error") {
        existing.error = e.error;
        if (frame.trace_id) existing.traceId = frame.trace_id;
      } else addError(m, frame, e.error, `err:${e.turn_id}`);
      return true;
    }
    case "turn.complete":
      turnComplete(m, frame);
      return true;
    default:
      return undefined;
  }
}

function messageStart(m: SessionModel, frame: FrameOf<"message.start">): void {
  const s = frame.payload;
  if (get(m, s.message_id, "delegation-result")) return;
  if (s.role === "user") {
    const b: Block = { kind: "user", key: s.message_id, text: frame.turn_id ? (idx(m).turnInputs.get(frame.turn_id) ?? "") : "" };
    if (frame.turn_id) b.turnId = frame.turn_id;
    const versions = idx(m).versionsOf.get(s.message_id);
    if (versions) b.versions = versions;
    add(m, b);
  } else if (s.role === "assistant") add(m, assistantBlock(s.message_id, "", "streaming", frame.turn_id));
}

function messageComplete(m: SessionModel, frame: FrameOf<"message.complete">): void {
  const c = frame.payload;
  const result = get(m, c.message_id, "delegation-result");
  if (result) {
    result.text = c.content.replace(RESULT_HEAD, "");
    return;
  }
  if (c.role === "user") {
    const b = getOrAdd(m, c.message_id, "user", () => ({ kind: "user", key: c.message_id, text: "" }));
    b.text = c.content;
    const attachments = c.parts?.filter(isAttachment);
    if (attachments?.length) b.attachments = attachments;
    return;
  }
  if (c.role !== "assistant") return;
  if (c.status === "error") {
    // Shown as an error card (the partial text, if any, stays above it).
    const existing = get(m, c.message_id, "assistant");
    if (existing && !existing.text && !c.content) removeBlock(m, c.message_id);
    else if (existing) Object.assign(existing, { text: c.content, status: "error" });
    addError(m, frame, c.error, `err:${c.message_id}`);
    return;
  }
  const b = getOrAdd(m, c.message_id, "assistant", () => assistantBlock(c.message_id, "", "streaming", frame.turn_id));
  b.text = c.content;
  b.status = c.status;
  if (c.stop_reason) b.stopReason = c.stop_reason;
  if (c.usage) m.usage[c.message_id] = c.usage;
  for (const call of c.tool_calls ?? []) add(m, toolBlock(call), c.message_id);
  // A message that only calls tools: its cards stand for it.
  if (!c.content && c.tool_calls?.length && c.status === "complete") removeBlock(m, c.message_id);
}

function turnComplete(m: SessionModel, frame: FrameOf<"turn.complete">): void {
  const t = frame.payload;
  if (!m.currentTurn || m.currentTurn === t.turn_id) {
    m.running = false;
    delete m.currentTurn;
  }
  for (const b of m.blocks) {
    if (b.kind === "assistant" && b.status === "streaming" && (!b.turnId || b.turnId === t.turn_id)) {
      b.status = t.status;
      if (t.stop_reason && t.status === "interrupted") b.stopReason ??= t.stop_reason;
    }
    if (b.kind === "tool" && !b.done && t.status !== "complete") {
      b.done = true;
      b.error ??= t.status;
    }
  }
}

/** Everything around the turn's messages: session info, todo, requests, branching, delegations. */
function applySessionFrame(m: SessionModel, frame: EventFrame): boolean {
  switch (frame.type) {
    case "session.info": {
      const info = frame.payload;
      if (typeof info.title === "string") m.title = info.title;
      if (typeof info.system_prompt === "string") {
        if (info.system_prompt) m.systemPrompt = info.system_prompt;
        else delete m.systemPrompt;
      }
      if (typeof info.model === "string") m.model = info.model;
      if (typeof info.provider === "string") m.provider = info.provider;
      return true;
    }
    case "todo.updated":
      applyTodoTo(m, frame.payload);
      return true;
    case "request.opened": {
      const r = frame.payload;
      if (!m.requests.some((x) => x.request_id === r.request_id)) m.requests.push({ ...r, turn_id: frame.turn_id ?? "", created_at: frame.ts });
      markAwaiting(m);
      return true;
    }
    case "request.resolved": {
      const id = frame.payload.request_id;
      m.requests = m.requests.filter((x) => x.request_id !== id);
      markAwaiting(m);
      return true;
    }
    case "model.switched": {
      const to = frame.payload.to ?? {};
      if (to.model) m.model = to.model;
      if (to.provider) m.provider = to.provider;
      delete m.pendingModel;
      add(m, { kind: "notice", key: `model:${frame.seq}`, text: `Model switched to ${to.model ?? "?"}`, tone: "info" });
      return true;
    }
    case "session.closed":
      m.state = "ended";
      m.running = false;
      m.endReason = String(frame.payload.end_reason ?? "");
      m.pending = [];
      return true; // no notice block: a view's ended bar says it, once
    case "session.rotated":
      add(m, { kind: "notice", key: `rotated:${frame.seq}`, text: "Conversation compressed into a continuation", tone: "info" });
      return true;
    default:
      return applyBranchOrDelegation(m, frame);
  }
}

function applyBranchOrDelegation(m: SessionModel, frame: EventFrame): boolean {
  switch (frame.type) {
    case "branch.created": {
      const b = frame.payload;
      cutFrom(m, b.replaced_message_id, b.hidden_message_ids);
      idx(m).versionsOf.set(b.message_id, [...b.versions]);
      return true;
    }
    case "branch.switched": {
      const b = frame.payload;
      cutFrom(m, b.previous_message_id, b.hidden_message_ids);
      seedTranscript(m, b.messages, []);
      markAwaiting(m);
      return true;
    }
    case "delegation.started":
      delegationStarted(m, frame.payload);
      return true;
    case "delegation.progress":
      delegationProgress(m, frame.payload, frame.ts);
      return true;
    case "delegation.delivered": {
      const d = frame.payload;
      const msg = { ...d.message, message_id: d.message.message_id ?? d.message_id };
      const shown = idx(m).byKey.get(msg.message_id);
      // Never as a bubble: should the message have been shown as one, the result card replaces it.
      if (shown && shown.kind !== "delegation-result") removeBlock(m, msg.message_id);
      add(m, resultBlock(msg));
      settleCard(m, msg);
      return true;
    }
    default:
      return applyProcessFrame(m, frame);
  }
}

function addError(m: SessionModel, frame: Frame, error: TurnErrorInfo | undefined, key: string): void {
  const existing = frame.turn_id ? m.blocks.find((b) => b.kind === "error" && b.turnId === frame.turn_id) : undefined;
  if (existing && existing.kind === "error") {
    if (error) existing.error = error;
    return;
  }
  const input = frame.turn_id ? idx(m).turnInputs.get(frame.turn_id) : undefined;
  const b: Block = { kind: "error", key, fresh: true };
  if (error) b.error = error;
  if (frame.turn_id) b.turnId = frame.turn_id;
  if (frame.trace_id) b.traceId = frame.trace_id;
  const fallback = withInput(m).input;
  if (input ?? fallback) b.input = input ?? fallback;
  add(m, b);
}

/**
 * Branching: the active branch from `first` on left it (a new version replaced it, or another one
 * was selected). Those messages' blocks go, and with them whatever was drawn after them.
 */
function cutFrom(m: SessionModel, first: string, hidden: readonly string[]): void {
  const gone = new Set([first, ...hidden]);
  const at = m.blocks.findIndex((b) => gone.has(b.key) || (b.kind === "error" && gone.has(b.key.slice(4))));
  if (at < 0) return;
  const i = idx(m);
  for (const b of m.blocks.splice(at)) i.byKey.delete(b.key);
}

function applyTodoTo(m: SessionModel, todo: { revision: number; items: TodoItem[] }): boolean {
  if (todo.revision < m.todo.revision) return false;
  m.todo = { revision: todo.revision, items: [...todo.items] };
  return true;
}

/** `todo.updated` or a `todo.get` answer: a lower revision than the one shown is ignored. */
export function applyTodo(m: SessionModel, todo: { revision: number; items: TodoItem[] }): boolean {
  if (!applyTodoTo(m, todo)) return false;
  m.version++;
  return true;
}

/** The text so far of a message whose deltas were missed (after a reconnect or restart). */
export function applyMessageSnapshot(m: SessionModel, snap: MessageSnapshot): void {
  const b = getOrAdd(m, snap.message_id, "assistant", () => assistantBlock(snap.message_id, "", "streaming", snap.turn_id));
  b.text = snap.text;
  if (snap.reasoning) b.reasoning = snap.reasoning;
  m.version++;
}

/** prompt.submit answered: a queued prompt stays visible as queued until its turn starts. */
export function settlePending(m: SessionModel, requestId: string, result: { turn_id: string; status: string }): void {
  const q = m.pending.find((x) => x.requestId === requestId);
  if (!q) return;
  if (idx(m).startedTurns.has(result.turn_id) || result.status === "duplicate") {
    m.pending = m.pending.filter((x) => x !== q);
  } else {
    q.turnId = result.turn_id;
    q.status = result.status === "queued" ? "queued" : "sending";
  }
  m.version++;
}
