/**
 * The transcript of one session as the page shows it, built from a Snapshot and then kept up to
 * date by frames (in seq order, each once: the SDK guarantees that). Pure data, no DOM, so the
 * rules that make the guarantee visible live in one place:
 *
 * - every block has a stable key (message_id, call_id, turn_id): a frame or snapshot that names
 *   a block already shown updates it in place, it never adds a second one;
 * - `message.complete` carries the authoritative text; a MessageSnapshot replaces the text of a
 *   message whose deltas were missed;
 * - the todo list only moves forward: a lower revision than the one shown is ignored.
 */
import type {
  Frame,
  Message,
  MessageCompletePayload,
  MessageDeltaPayload,
  MessageSnapshot,
  MessageStartPayload,
  Snapshot,
  TodoItem,
  ToolCompletePayload,
  ToolStartPayload,
  TurnCompletePayload,
  TurnErrorPayload,
  TurnStartPayload,
} from "../../src/protocol/index.js";

export interface TurnErrorInfo {
  layer: string;
  code: string;
  retryable: boolean;
  message: string;
}

export type Block =
  | { kind: "user"; key: string; text: string; turnId?: string }
  | {
      kind: "assistant";
      key: string;
      text: string;
      reasoning: string;
      status: "streaming" | "complete" | "interrupted" | "error";
      turnId?: string;
    }
  | {
      kind: "tool";
      key: string;
      name: string;
      args: unknown;
      result?: unknown;
      error?: string;
      durationMs?: number;
      done: boolean;
    }
  | {
      kind: "error";
      key: string;
      error?: TurnErrorInfo;
      turnId?: string;
      traceId?: string;
      /** The prompt of the failed turn, for Retry. */
      input?: string;
    }
  | {
      kind: "delegation";
      key: string;
      title: string;
      status: "running" | "delivered" | "failed";
      progress?: string;
      result?: string;
    }
  | { kind: "notice"; key: string; text: string; tone: "info" | "warn" };

export interface PendingPrompt {
  /** The request_id sent with prompt.submit (idempotent retry key). */
  requestId: string;
  text: string;
  status: "sending" | "queued" | "failed";
  turnId?: string;
  error?: string;
}

export interface SessionModel {
  sessionId: string;
  title: string;
  model: string;
  provider: string;
  state: "live" | "detached" | "ended";
  endReason?: string;
  running: boolean;
  currentTurn?: string;
  blocks: Block[];
  todo: { revision: number; items: TodoItem[] };
  pending: PendingPrompt[];
  /** A model switch stashed until the running turn ends. */
  pendingModel?: string;
  /** Bumped on every change, so views can tell. */
  version: number;
}

/** Internal indexes kept beside the model (not rendered). */
interface Index {
  byKey: Map<string, Block>;
  turnInputs: Map<string, string>;
  startedTurns: Set<string>;
  /** message_id of a delivered delegation result → the delegation's card. */
  deliveredMessages: Map<string, string>;
}

const indexes = new WeakMap<SessionModel, Index>();

function idx(m: SessionModel): Index {
  let i = indexes.get(m);
  if (!i) {
    i = { byKey: new Map(), turnInputs: new Map(), startedTurns: new Set(), deliveredMessages: new Map() };
    for (const b of m.blocks) i.byKey.set(b.key, b);
    indexes.set(m, i);
  }
  return i;
}

function add(m: SessionModel, block: Block, after?: string): Block {
  const i = idx(m);
  const existing = i.byKey.get(block.key);
  if (existing) return existing;
  i.byKey.set(block.key, block);
  const at = after === undefined ? -1 : lastIndexOfGroup(m, after);
  if (at < 0) m.blocks.push(block);
  else m.blocks.splice(at + 1, 0, block);
  return block;
}

/** Tool cards of a message go right after it (and after the cards already placed there). */
function lastIndexOfGroup(m: SessionModel, key: string): number {
  let at = m.blocks.findIndex((b) => b.key === key);
  if (at < 0) return -1;
  while (at + 1 < m.blocks.length && m.blocks[at + 1]!.kind === "tool") at++;
  return at;
}

function get<K extends Block["kind"]>(m: SessionModel, key: string, kind: K): Extract<Block, { kind: K }> | undefined {
  const b = idx(m).byKey.get(key);
  return b && b.kind === kind ? (b as Extract<Block, { kind: K }>) : undefined;
}

function parseArgs(text: string): unknown {
  try {
    return text.trim() === "" ? {} : JSON.parse(text);
  } catch {
    return text;
  }
}

function precedingUserText(m: SessionModel, before: number): string | undefined {
  for (let k = before - 1; k >= 0; k--) {
    const b = m.blocks[k]!;
    if (b.kind === "user") return b.text;
  }
  return undefined;
}

/** A model from a Snapshot (session.create / session.resume). */
export function fromSnapshot(snap: Snapshot, previous?: SessionModel): SessionModel {
  const m: SessionModel = {
    sessionId: snap.session_id,
    title: snap.title,
    model: snap.model,
    provider: snap.provider,
    state: snap.state,
    running: snap.running,
    blocks: [],
    todo: { revision: snap.todo.revision, items: [...snap.todo.items] },
    pending: previous?.sessionId === snap.session_id ? previous.pending : [],
    version: (previous?.version ?? 0) + 1,
  };
  if (previous?.sessionId === snap.session_id) {
    if (previous.pendingModel) m.pendingModel = previous.pendingModel;
    // The todo list only moves forward, even across a re-open.
    if (previous.todo.revision > m.todo.revision) m.todo = previous.todo;
  }
  for (const msg of snap.messages) addMessage(m, msg);
  return m;
}

function addMessage(m: SessionModel, msg: Message): void {
  if (msg.display_kind?.startsWith("delegation")) {
    // A sub-agent's delivered result: its own kind of message, never shown as typed by the user.
    const meta = msg.display_metadata ?? {};
    const key = String(meta["delegation_id"] ?? msg.message_id);
    const existing = get(m, key, "delegation");
    if (existing) {
      existing.status = "delivered";
      existing.result = msg.content;
    } else {
      add(m, { kind: "delegation", key, title: String(meta["title"] ?? meta["task"] ?? "Sub-agent"), status: "delivered", result: msg.content });
    }
    return;
  }
  if (msg.role === "user") {
    add(m, { kind: "user", key: msg.message_id, text: msg.content });
  } else if (msg.role === "assistant") {
    if (msg.status === "error") {
      add(m, { kind: "error", key: `err:${msg.message_id}`, ...withInput(m) });
      if (msg.content) add(m, assistantBlock(msg.message_id, msg.content, "error"));
      return;
    }
    if (msg.content || !msg.tool_calls?.length || msg.status !== "complete") {
      add(m, assistantBlock(msg.message_id, msg.content, msg.status));
    }
    for (const call of msg.tool_calls ?? []) {
      add(m, { kind: "tool", key: call.id, name: call.name, args: parseArgs(call.arguments), done: false });
    }
  } else if (msg.role === "tool" && msg.tool_call_id) {
    const tool = get(m, msg.tool_call_id, "tool");
    if (tool) {
      tool.done = true;
      const parsed = parseArgs(msg.content);
      if (parsed && typeof parsed === "object" && "error" in parsed && Object.keys(parsed).length === 1) {
        tool.error = String((parsed as { error: unknown }).error);
      } else tool.result = parsed;
    }
  }
}

function withInput(m: SessionModel): { input?: string } {
  const input = precedingUserText(m, m.blocks.length);
  return input === undefined ? {} : { input };
}

function assistantBlock(key: string, text: string, status: Message["status"], turnId?: string): Block {
  const b: Block = { kind: "assistant", key, text, reasoning: "", status };
  if (turnId) b.turnId = turnId;
  return b;
}

/** Applies one frame (in seq order). Returns true when something visible changed. */
export function applyFrame(m: SessionModel, frame: Frame): boolean {
  const i = idx(m);
  const p = frame.payload as Record<string, unknown>;
  switch (frame.type) {
    case "session.info": {
      const info = p as { title?: string; model?: string; provider?: string };
      if (typeof info.title === "string") m.title = info.title;
      if (typeof info.model === "string") m.model = info.model;
      if (typeof info.provider === "string") m.provider = info.provider;
      break;
    }
    case "turn.start": {
      const t = p as unknown as TurnStartPayload;
      m.running = true;
      m.currentTurn = t.turn_id;
      i.turnInputs.set(t.turn_id, t.input);
      i.startedTurns.add(t.turn_id);
      m.pending = m.pending.filter((q) => q.turnId !== t.turn_id);
      break;
    }
    case "message.start": {
      const s = p as unknown as MessageStartPayload;
      if (i.deliveredMessages.has(s.message_id)) break;
      if (s.role === "user") {
        const b: Block = { kind: "user", key: s.message_id, text: frame.turn_id ? (i.turnInputs.get(frame.turn_id) ?? "") : "" };
        if (frame.turn_id) b.turnId = frame.turn_id;
        add(m, b);
      } else if (s.role === "assistant") add(m, assistantBlock(s.message_id, "", "streaming", frame.turn_id));
      break;
    }
    case "message.delta":
    case "reasoning.delta": {
      const d = p as unknown as MessageDeltaPayload;
      const b = (get(m, d.message_id, "assistant") ?? add(m, assistantBlock(d.message_id, "", "streaming", frame.turn_id))) as Extract<Block, { kind: "assistant" }>;
      if (frame.type === "message.delta") b.text += d.text;
      else b.reasoning += d.text;
      break;
    }
    case "message.complete": {
      const c = p as unknown as MessageCompletePayload;
      const delegation = i.deliveredMessages.get(c.message_id);
      if (delegation) {
        const card = get(m, delegation, "delegation");
        if (card) card.result = c.content;
        break;
      }
      if (c.role === "user") {
        const b = get(m, c.message_id, "user") ?? (add(m, { kind: "user", key: c.message_id, text: "" }) as Extract<Block, { kind: "user" }>);
        b.text = c.content;
        break;
      }
      if (c.role !== "assistant") break;
      if (c.status === "error") {
        // Shown as an error card (the partial text, if any, stays above it).
        const existing = get(m, c.message_id, "assistant");
        if (existing && !existing.text && !c.content) removeBlock(m, c.message_id);
        else if (existing) Object.assign(existing, { text: c.content, status: "error" });
        addError(m, frame, c.error, `err:${c.message_id}`);
        break;
      }
      const b = get(m, c.message_id, "assistant") ?? (add(m, assistantBlock(c.message_id, "", "streaming", frame.turn_id)) as Extract<Block, { kind: "assistant" }>);
      b.text = c.content;
      b.status = c.status;
      if (!c.content && c.tool_calls?.length && c.status === "complete") {
        // A message that only calls tools: its cards stand for it.
        for (const call of c.tool_calls) add(m, { kind: "tool", key: call.id, name: call.name, args: parseArgs(call.arguments), done: false }, c.message_id);
        removeBlock(m, c.message_id);
      } else {
        for (const call of c.tool_calls ?? []) add(m, { kind: "tool", key: call.id, name: call.name, args: parseArgs(call.arguments), done: false }, c.message_id);
      }
      break;
    }
    case "tool.start": {
      const t = p as unknown as ToolStartPayload;
      const b = get(m, t.call_id, "tool");
      if (b) b.args = t.args;
      else add(m, { kind: "tool", key: t.call_id, name: t.name, args: t.args, done: false });
      break;
    }
    case "tool.complete": {
      const t = p as unknown as ToolCompletePayload;
      const b = get(m, t.call_id, "tool") ?? (add(m, { kind: "tool", key: t.call_id, name: t.name, args: undefined, done: false }) as Extract<Block, { kind: "tool" }>);
      b.done = true;
      b.result = t.result;
      b.durationMs = t.duration_ms;
      if (t.error !== undefined) b.error = t.error;
      break;
    }
    case "todo.updated":
      applyTodo(m, p as unknown as { revision: number; items: TodoItem[] });
      break;
    case "turn.error": {
      const e = p as unknown as TurnErrorPayload;
      const existing = m.blocks.find((b) => b.kind === "error" && b.turnId === e.turn_id);
      if (existing && existing.kind === "error") {
        existing.error = e.error;
        if (frame.trace_id) existing.traceId = frame.trace_id;
      } else addError(m, frame, e.error, `err:${e.turn_id}`);
      break;
    }
    case "turn.complete": {
      const t = p as unknown as TurnCompletePayload;
      if (!m.currentTurn || m.currentTurn === t.turn_id) {
        m.running = false;
        delete m.currentTurn;
      }
      for (const b of m.blocks) {
        if (b.kind === "assistant" && b.status === "streaming" && (!b.turnId || b.turnId === t.turn_id)) {
          b.status = t.status === "complete" ? "complete" : t.status;
        }
        if (b.kind === "tool" && !b.done && t.status !== "complete") {
          b.done = true;
          b.error ??= t.status;
        }
      }
      break;
    }
    case "model.switched": {
      const s = p as { to?: { model?: string; provider?: string } | string };
      const to = typeof s.to === "string" ? { model: s.to } : (s.to ?? {});
      if (to.model) m.model = to.model;
      if (to.provider) m.provider = to.provider;
      delete m.pendingModel;
      add(m, { kind: "notice", key: `model:${frame.seq}`, text: `Model switched to ${to.model ?? "?"}`, tone: "info" });
      break;
    }
    case "session.closed": {
      m.state = "ended";
      m.running = false;
      m.endReason = String(p["end_reason"] ?? "");
      m.pending = [];
      add(m, { kind: "notice", key: `closed:${frame.seq}`, text: `Session ended (${m.endReason.replace(/_/g, " ")})`, tone: "warn" });
      break;
    }
    case "session.rotated":
      add(m, { kind: "notice", key: `rotated:${frame.seq}`, text: "Conversation compressed into a continuation", tone: "info" });
      break;
    case "delegation.started":
    case "delegation.progress":
    case "delegation.delivered":
    case "delegation.failed":
      applyDelegation(m, frame);
      break;
    default:
      return false;
  }
  m.version++;
  return true;
}

function addError(m: SessionModel, frame: Frame, error: TurnErrorInfo | undefined, key: string): void {
  const existing = frame.turn_id ? m.blocks.find((b) => b.kind === "error" && b.turnId === frame.turn_id) : undefined;
  if (existing && existing.kind === "error") {
    if (error) existing.error = error;
    return;
  }
  const input = frame.turn_id ? idx(m).turnInputs.get(frame.turn_id) : undefined;
  const b: Block = { kind: "error", key };
  if (error) b.error = error;
  if (frame.turn_id) b.turnId = frame.turn_id;
  if (frame.trace_id) b.traceId = frame.trace_id;
  const fallback = withInput(m).input;
  if (input ?? fallback) b.input = input ?? fallback;
  add(m, b);
}

function removeBlock(m: SessionModel, key: string): void {
  const i = idx(m);
  i.byKey.delete(key);
  m.blocks = m.blocks.filter((b) => b.key !== key);
}

function applyDelegation(m: SessionModel, frame: Frame): void {
  const p = (frame.payload ?? {}) as Record<string, unknown>;
  const id = String(p["delegation_id"] ?? p["id"] ?? `d${frame.seq}`);
  const title = String(p["title"] ?? p["task"] ?? p["goal"] ?? p["profile"] ?? "Sub-agent");
  const b =
    get(m, id, "delegation") ??
    (add(m, { kind: "delegation", key: id, title, status: "running" }) as Extract<Block, { kind: "delegation" }>);
  if (frame.type === "delegation.progress") {
    const text = p["text"] ?? p["message"] ?? p["status"];
    if (typeof text === "string") b.progress = text;
  } else if (frame.type === "delegation.delivered") {
    b.status = p["status"] === "failed" || p["error"] ? "failed" : "delivered";
    const result = p["result"] ?? p["summary"] ?? p["content"];
    if (typeof result === "string") b.result = result;
    // The result message is the card's content, not a message of its own.
    const messageId = p["message_id"];
    if (typeof messageId === "string") {
      idx(m).deliveredMessages.set(messageId, id);
      const shown = idx(m).byKey.get(messageId);
      if (shown && (shown.kind === "user" || shown.kind === "assistant")) {
        b.result ??= shown.text;
        removeBlock(m, messageId);
      }
    }
  } else if (frame.type === "delegation.failed") {
    b.status = "failed";
    const err = p["error"];
    if (err) b.result = typeof err === "string" ? err : JSON.stringify(err);
  }
}

/** `todo.updated` or a `todo.get` answer: a lower revision than the one shown is ignored. */
export function applyTodo(m: SessionModel, todo: { revision: number; items: TodoItem[] }): boolean {
  if (todo.revision < m.todo.revision) return false;
  m.todo = { revision: todo.revision, items: [...todo.items] };
  m.version++;
  return true;
}

/** The text so far of a message whose deltas were missed (after a reconnect or restart). */
export function applyMessageSnapshot(m: SessionModel, snap: MessageSnapshot): void {
  const b =
    get(m, snap.message_id, "assistant") ??
    (add(m, assistantBlock(snap.message_id, "", "streaming", snap.turn_id)) as Extract<Block, { kind: "assistant" }>);
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
