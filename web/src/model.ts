/**
 * The transcript of one session as the page shows it, built from a Snapshot and then kept up to
 * date by frames (in seq order, each once: the SDK guarantees that). Pure data, no DOM, so the
 * rules that make the guarantee visible live in one place:
 *
 * - every block has a stable key (message_id, call_id, turn_id): a frame or snapshot that names
 *   a block already shown updates it in place, it never adds a second one;
 * - `message.complete` carries the authoritative text; a MessageSnapshot replaces the text of a
 *   message whose deltas were missed;
 * - the todo list only moves forward: a lower revision than the one shown is ignored;
 * - a delegation (background sub-agents) is a card placed where it started, kept up to date by
 *   `delegation.*` frames and seeded from the Snapshot's `delegations[]`; its delivered result
 *   (a `role: "user"` message with `display_kind: "async_delegation_complete"`) is a result card
 *   of its own where it landed, never a bubble the user typed.
 *
 * Protocol imports are types and plain constants only (never the zod schemas): the bundle stays
 * small, and test/unit/web-imports.test.ts fails if zod or a server module comes back.
 */
import { DisplayKind, isDelegationKind } from "../../src/protocol/types.js";
import type {
  BranchCreatedPayload,
  BranchSwitchedPayload,
  DelegationDeliveredPayload,
  DelegationKind,
  DelegationResultMetadata,
  DelegationProgressPayload,
  DelegationStartedPayload,
  DelegationSummary,
  DelegationTaskSummary,
  Frame,
  Message,
  MessageCompletePayload,
  MessageDeltaPayload,
  MessageSnapshot,
  MessageStartPayload,
  OpenRequest,
  RequestOpenedPayload,
  RequestResolvedPayload,
  Snapshot,
  TodoItem,
  ToolCompletePayload,
  ToolStartPayload,
  TurnCompletePayload,
  TurnErrorPayload,
  TurnStartPayload,
  StopReason,
  Usage,
} from "../../src/protocol/index.js";

export interface TurnErrorInfo {
  layer: string;
  code: string;
  retryable: boolean;
  message: string;
}

export type Block =
  | {
      kind: "user";
      key: string;
      text: string;
      turnId?: string;
      /** Every version of this prompt, oldest first (the gateway's branching), when there are several. */
      versions?: string[];
    }
  | {
      kind: "assistant";
      key: string;
      text: string;
      reasoning: string;
      status: "streaming" | "complete" | "interrupted" | "error";
      turnId?: string;
      /** Why an interrupted reply stopped, as the gateway stored it (the same in every browser). */
      stopReason?: StopReason;
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
      /** Its call waits for an approval (an open request names it). */
      awaiting?: boolean;
    }
  | {
      kind: "error";
      key: string;
      error?: TurnErrorInfo;
      turnId?: string;
      traceId?: string;
      /** The prompt of the failed turn, for Retry. */
      input?: string;
      /** It arrived live while the page watched (announced as an alert); not one rebuilt from a snapshot. */
      fresh?: boolean;
    }
  | {
      kind: "delegation";
      /** The delegation_id. */
      key: string;
      /** `delegate` (delegate_task) or `review` (/review). */
      delegationKind: DelegationKind;
      /** running → completed (every task ended, delivery pending) → delivered. */
      status: DelegationSummary["status"];
      tasks: DelegationTaskView[];
      /** Start to completion, once known (the delivered metadata's `duration_ms`). */
      durationMs?: number;
      /** The message_id of the delivered result (its result card's key). */
      resultKey?: string;
    }
  | {
      kind: "delegation-result";
      /** The message_id of the delivered message. */
      key: string;
      delegationId: string;
      delegationKind: DelegationKind;
      /** The message's Markdown, without its leading `[… complete — …]` line (the card's head says it). */
      text: string;
      completed: number;
      failed: number;
      total: number;
      durationMs?: number;
      tasks: DelegationTaskView[];
    }
  | { kind: "notice"; key: string; text: string; tone: "info" | "warn" };

/** One sub-agent task as a card shows it. */
export interface DelegationTaskView {
  goal: string;
  status: DelegationTaskSummary["status"];
  error?: string;
  childSessionId?: string;
  durationMs?: number;
}

/** `display_metadata` of a delivered delegation result: the protocol's shape (docs/protocol.md). */
export type { DelegationResultMetadata };

export interface PendingPrompt {
  /** The request_id sent with prompt.submit (idempotent retry key). */
  requestId: string;
  text: string;
  status: "sending" | "queued" | "failed";
  turnId?: string;
  error?: string;
  /** Regenerate / edit-and-resend: the user message this prompt is a new version of (`from_message_id`). */
  replaces?: string;
}

export interface SessionModel {
  sessionId: string;
  title: string;
  profile: string;
  model: string;
  provider: string;
  state: "live" | "detached" | "idle" | "ended";
  endReason?: string;
  running: boolean;
  currentTurn?: string;
  blocks: Block[];
  todo: { revision: number; items: TodoItem[] };
  pending: PendingPrompt[];
  /** What the session waits for (approvals, input), oldest first: shown as cards until answered. */
  requests: OpenRequest[];
  /** A model switch stashed until the running turn ends. */
  pendingModel?: string;
  /** The session's own system prompt (absent: the profile's applies) and whether it may change. */
  systemPrompt?: string;
  systemPromptFixed?: boolean;
  /** Token usage of each finished assistant message (`message.complete.usage`, or the stored Message's `usage`). */
  usage: Record<string, Usage>;
  /** The session's context as the gateway counted it for the Snapshot (`context_tokens`). */
  contextTokens?: number;
  /** Bumped on every change, so views can tell. */
  version: number;
}

/** Internal indexes kept beside the model (not rendered). */
interface Index {
  byKey: Map<string, Block>;
  turnInputs: Map<string, string>;
  startedTurns: Set<string>;
  /** `${delegation_id}#${task_index}` → the `ts` of the frame that said the task started running. */
  taskStarts: Map<string, number>;
  /** New user message id → its versions, from a `branch.created` that came before the message. */
  versionsOf: Map<string, string[]>;
}

const indexes = new WeakMap<SessionModel, Index>();

function idx(m: SessionModel): Index {
  let i = indexes.get(m);
  if (!i) {
    i = { byKey: new Map(), turnInputs: new Map(), startedTurns: new Set(), taskStarts: new Map(), versionsOf: new Map() };
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
  const same = previous?.sessionId === snap.session_id;
  const m: SessionModel = {
    sessionId: snap.session_id,
    title: snap.title,
    profile: snap.profile,
    model: snap.model,
    provider: snap.provider,
    state: snap.state,
    running: snap.running,
    blocks: [],
    todo: { revision: snap.todo.revision, items: [...snap.todo.items] },
    pending: previous?.sessionId === snap.session_id ? previous.pending : [],
    requests: [...(snap.open_requests ?? [])],
    ...(snap.system_prompt ? { systemPrompt: snap.system_prompt } : {}),
    ...(snap.system_prompt_fixed ? { systemPromptFixed: true } : {}),
    usage: same ? { ...previous!.usage } : {},
    ...(snap.context_tokens !== undefined ? { contextTokens: snap.context_tokens } : {}),
    version: (previous?.version ?? 0) + 1,
  };
  for (const msg of snap.messages) if (msg.usage) m.usage[msg.message_id] = msg.usage;
  if (previous?.sessionId === snap.session_id) {
    if (previous.pendingModel) m.pendingModel = previous.pendingModel;
    // The todo list only moves forward, even across a re-open.
    if (previous.todo.revision > m.todo.revision) m.todo = previous.todo;
  }
  seedTranscript(m, snap.messages, snap.delegations ?? []);
  markAwaiting(m);
  return m;
}

/**
 * Messages and delegation cards in transcript order: a card started by `delegate_task` goes right
 * after that tool's card (as it does live); any other (a `/review`, after its command's user
 * message) goes where its `created_at` falls among the messages.
 */
function seedTranscript(m: SessionModel, messages: Message[], delegations: DelegationSummary[]): void {
  const waiting = [...delegations].sort((a, b) => a.created_at - b.created_at);
  const byToolCall = new Map<string, DelegationSummary>();
  for (const msg of messages) {
    if (msg.role !== "tool" || !msg.tool_call_id) continue;
    const result = parseArgs(msg.content);
    const id = result && typeof result === "object" ? (result as { delegation_id?: unknown }).delegation_id : undefined;
    const d = typeof id === "string" ? waiting.find((x) => x.delegation_id === id) : undefined;
    if (d) byToolCall.set(msg.tool_call_id, d);
  }
  const linked = new Set(byToolCall.values());
  for (const msg of messages) {
    while (waiting.length > 0) {
      const next = waiting.find((d) => !linked.has(d));
      if (!next || next.created_at >= msg.created_at) break;
      waiting.splice(waiting.indexOf(next), 1);
      add(m, delegationCard(next));
    }
    addMessage(m, msg);
    for (const call of msg.tool_calls ?? []) {
      const d = byToolCall.get(call.id);
      if (!d || !waiting.includes(d)) continue;
      waiting.splice(waiting.indexOf(d), 1);
      add(m, delegationCard(d), call.id);
    }
  }
  for (const d of waiting) add(m, delegationCard(d));
}

/** A delegation card from a DelegationSummary (Snapshot `delegations[]`, `delegation.list`). */
export function delegationCard(d: DelegationSummary): Extract<Block, { kind: "delegation" }> {
  const card: Extract<Block, { kind: "delegation" }> = {
    kind: "delegation",
    key: d.delegation_id,
    delegationKind: d.kind,
    status: d.status,
    tasks: d.tasks.map((t) => {
      const v: DelegationTaskView = { goal: t.goal, status: t.status };
      if (t.error) v.error = t.error;
      if (t.child_session_id) v.childSessionId = t.child_session_id;
      if (typeof t.duration_ms === "number") v.durationMs = t.duration_ms;
      return v;
    }),
  };
  if (d.completed_at !== null) card.durationMs = Math.max(0, d.completed_at - d.created_at);
  if (d.delivered_message_id) card.resultKey = d.delivered_message_id;
  return card;
}

/** A delivered delegation result message (`display_kind: async_delegation_complete`)? */
export function isDelegationResult(msg: Pick<Message, "display_kind">): boolean {
  return msg.display_kind === DisplayKind.DelegationComplete;
}

/** The result's `display_metadata`, read defensively (a field missing never breaks the page). */
export function resultMetadata(msg: Pick<Message, "message_id" | "display_metadata">): DelegationResultMetadata {
  const meta = msg.display_metadata ?? {};
  const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
  const tasks = Array.isArray(meta["tasks"]) ? (meta["tasks"] as unknown[]) : [];
  return {
    delegation_id: typeof meta["delegation_id"] === "string" ? meta["delegation_id"] : msg.message_id,
    kind: isDelegationKind(meta["kind"]) ? meta["kind"] : "delegate",
    completed: num(meta["completed"]),
    failed: num(meta["failed"]),
    total: num(meta["total"]) || tasks.length,
    duration_ms: num(meta["duration_ms"]),
    tasks: tasks.map((t) => {
      const o = (t && typeof t === "object" ? t : {}) as Record<string, unknown>;
      const status = o["status"];
      return {
        goal: typeof o["goal"] === "string" ? o["goal"] : "",
        status: status === "completed" || status === "failed" || status === "running" || status === "pending" ? status : "failed",
        child_session_id: typeof o["child_session_id"] === "string" ? o["child_session_id"] : null,
        error: typeof o["error"] === "string" ? o["error"] : null,
      };
    }),
  };
}

/** `[Background task complete — delegation …: 2 completed, 0 failed, 0.3 s]`: for the model, not the card. */
const RESULT_HEAD = /^\[(?:Background task|Review) complete[^\]\n]*\]\s*/;

function resultBlock(msg: Pick<Message, "message_id" | "content" | "display_metadata">): Extract<Block, { kind: "delegation-result" }> {
  const meta = resultMetadata(msg);
  const b: Extract<Block, { kind: "delegation-result" }> = {
    kind: "delegation-result",
    key: msg.message_id,
    delegationId: meta.delegation_id,
    delegationKind: meta.kind,
    text: msg.content.replace(RESULT_HEAD, ""),
    completed: meta.completed,
    failed: meta.failed,
    total: meta.total,
    tasks: meta.tasks.map((t) => {
      const v: DelegationTaskView = { goal: t.goal, status: t.status };
      if (t.error) v.error = t.error;
      if (t.child_session_id) v.childSessionId = t.child_session_id;
      return v;
    }),
  };
  if (typeof msg.display_metadata?.["duration_ms"] === "number") b.durationMs = meta.duration_ms;
  return b;
}

/** The delivered result also settles the delegation's card (when shown). */
function settleCard(m: SessionModel, msg: Pick<Message, "message_id" | "display_metadata">): void {
  const meta = resultMetadata(msg);
  const card = get(m, meta.delegation_id, "delegation");
  if (!card) return;
  card.status = "delivered";
  card.resultKey = msg.message_id;
  if (typeof msg.display_metadata?.["duration_ms"] === "number") card.durationMs = meta.duration_ms;
  meta.tasks.forEach((t, n) => {
    const v = card.tasks[n] ?? (card.tasks[n] = { goal: t.goal, status: t.status });
    v.status = t.status;
    if (t.goal) v.goal = t.goal;
    if (t.error) v.error = t.error;
    else delete v.error;
    if (t.child_session_id) v.childSessionId = t.child_session_id;
  });
}

function addMessage(m: SessionModel, msg: Message): void {
  if (isDelegationResult(msg)) {
    // A sub-agent's delivered result: its own kind of block, never shown as typed by the user.
    add(m, resultBlock(msg));
    settleCard(m, msg);
    return;
  }
  if (msg.role === "user") {
    const b: Block = { kind: "user", key: msg.message_id, text: msg.content };
    if (msg.versions && msg.versions.length > 1) b.versions = [...msg.versions];
    add(m, b);
  } else if (msg.role === "assistant") {
    if (msg.status === "error") {
      // As live: the partial text (if any) above the card, which shows the stored error (the same
      // layer/code/retryable the live `turn.error` did).
      if (msg.content) add(m, assistantBlock(msg.message_id, msg.content, "error"));
      const card: Block = { kind: "error", key: `err:${msg.message_id}`, ...withInput(m) };
      if (msg.error) card.error = { ...msg.error };
      // The turn's ids, as the live card has them from its frames (the diagnostics line, Copy diagnostics).
      if (msg.turn_id) card.turnId = msg.turn_id;
      if (msg.trace_id) card.traceId = msg.trace_id;
      add(m, card);
      return;
    }
    if (msg.content || !msg.tool_calls?.length || msg.status !== "complete") {
      const b = assistantBlock(msg.message_id, msg.content, msg.status);
      if (msg.stop_reason && b.kind === "assistant") b.stopReason = msg.stop_reason;
      add(m, b);
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
      const info = p as { title?: string; model?: string; provider?: string; system_prompt?: string };
      if (typeof info.title === "string") m.title = info.title;
      if (typeof info.system_prompt === "string") {
        if (info.system_prompt) m.systemPrompt = info.system_prompt;
        else delete m.systemPrompt;
      }
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
      if (get(m, s.message_id, "delegation-result")) break;
      if (s.role === "user") {
        const b: Block = { kind: "user", key: s.message_id, text: frame.turn_id ? (i.turnInputs.get(frame.turn_id) ?? "") : "" };
        if (frame.turn_id) b.turnId = frame.turn_id;
        const versions = i.versionsOf.get(s.message_id);
        if (versions && b.kind === "user") b.versions = versions;
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
      const result = get(m, c.message_id, "delegation-result");
      if (result) {
        result.text = c.content.replace(RESULT_HEAD, "");
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
      if (c.stop_reason) b.stopReason = c.stop_reason;
      if (c.usage) m.usage[c.message_id] = c.usage;
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
    case "request.opened": {
      const r = p as unknown as RequestOpenedPayload;
      if (!m.requests.some((x) => x.request_id === r.request_id)) m.requests.push({ ...r, turn_id: frame.turn_id ?? "", created_at: frame.ts });
      markAwaiting(m);
      break;
    }
    case "request.resolved": {
      const r = p as unknown as RequestResolvedPayload;
      m.requests = m.requests.filter((x) => x.request_id !== r.request_id);
      markAwaiting(m);
      break;
    }
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
          if (t.stop_reason && t.status === "interrupted") b.stopReason ??= t.stop_reason;
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
      // No notice here: the ended bar says it, once.
      break;
    }
    case "session.rotated":
      add(m, { kind: "notice", key: `rotated:${frame.seq}`, text: "Conversation compressed into a continuation", tone: "info" });
      break;
    case "delegation.started":
      delegationStarted(m, p as unknown as DelegationStartedPayload);
      break;
    case "delegation.progress":
      delegationProgress(m, p as unknown as DelegationProgressPayload, frame.ts);
      break;
    case "branch.created": {
      const b = p as unknown as BranchCreatedPayload;
      cutFrom(m, b.replaced_message_id, b.hidden_message_ids);
      i.versionsOf.set(b.message_id, [...b.versions]);
      break;
    }
    case "branch.switched": {
      const b = p as unknown as BranchSwitchedPayload;
      cutFrom(m, b.previous_message_id, b.hidden_message_ids);
      seedTranscript(m, b.messages, []);
      markAwaiting(m);
      break;
    }
    case "delegation.delivered": {
      const d = p as unknown as DelegationDeliveredPayload;
      const msg = { ...d.message, message_id: d.message.message_id ?? d.message_id };
      const shown = idx(m).byKey.get(msg.message_id);
      // Never as a bubble: should the message have been shown as one, the result card replaces it.
      if (shown && shown.kind !== "delegation-result") removeBlock(m, msg.message_id);
      add(m, resultBlock(msg));
      settleCard(m, msg);
      break;
    }
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
 * was selected). Those messages' blocks go, and with them whatever the page drew after them.
 */
function cutFrom(m: SessionModel, first: string, hidden: readonly string[]): void {
  const gone = new Set([first, ...hidden]);
  const at = m.blocks.findIndex((b) => gone.has(b.key) || (b.kind === "error" && gone.has(b.key.slice(4))));
  if (at < 0) return;
  const i = idx(m);
  for (const b of m.blocks.splice(at)) i.byKey.delete(b.key);
}

function removeBlock(m: SessionModel, key: string): void {
  const i = idx(m);
  i.byKey.delete(key);
  m.blocks = m.blocks.filter((b) => b.key !== key);
}

function delegationStarted(m: SessionModel, p: DelegationStartedPayload): void {
  if (get(m, p.delegation_id, "delegation")) return; // already shown (a Snapshot seeded it)
  add(m, {
    kind: "delegation",
    key: p.delegation_id,
    delegationKind: p.kind,
    status: "running",
    tasks: p.goals.map((goal) => ({ goal, status: "pending" })),
  });
}

function delegationProgress(m: SessionModel, p: DelegationProgressPayload, ts: number): void {
  const card =
    get(m, p.delegation_id, "delegation") ??
    (add(m, { kind: "delegation", key: p.delegation_id, delegationKind: "delegate", status: "running", tasks: [] }) as Extract<
      Block,
      { kind: "delegation" }
    >);
  if (card.status === "delivered") return;
  for (let n = card.tasks.length; n <= p.task_index; n++) card.tasks.push({ goal: "", status: "pending" });
  const task = card.tasks[p.task_index]!;
  if (p.goal) task.goal = p.goal;
  if (p.child_session_id) task.childSessionId = p.child_session_id;
  const startKey = `${p.delegation_id}#${p.task_index}`;
  const starts = idx(m).taskStarts;
  if (p.status === "running") {
    // A task that ended stays ended.
    if (task.status === "pending" || task.status === "running") {
      task.status = "running";
      starts.set(startKey, ts);
    }
  } else {
    task.status = p.status;
    if (p.error) task.error = p.error;
    const started = starts.get(startKey);
    if (started !== undefined && task.durationMs === undefined) task.durationMs = Math.max(0, ts - started);
  }
  if (card.status === "running" && card.tasks.length > 0 && card.tasks.every((t) => t.status === "completed" || t.status === "failed")) {
    card.status = "completed";
  }
}

/** Tool cards whose call an open approval names say so (instead of "running"). */
function markAwaiting(m: SessionModel): void {
  const waiting = new Set(m.requests.flatMap((r) => (r.kind === "approval" && r.call_id ? [r.call_id] : [])));
  for (const b of m.blocks) if (b.kind === "tool") b.awaiting = waiting.has(b.key) && !b.done;
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
