/**
 * A transcript from stored messages: a Snapshot (session.create / session.resume), a branch
 * switched to (`branch.switched.messages`), or the read-only transcript of an ended session.
 */
import type { DelegationSummary, Message, Snapshot } from "../../protocol/index.js";
import { isAttachment } from "../../protocol/index.js";
import { delegationCard, isDelegationResult, resultBlock, settleCard } from "./delegation-cards.js";
import { add, assistantBlock, get, markAwaiting, parseArgs, toolBlock, withInput } from "./transcript-index.js";
import type { Block, SessionModel } from "./transcript-types.js";

/** A model from a Snapshot; `previous` (the same session shown before) keeps pending prompts, usage and a newer todo. */
export function fromSnapshot(snap: Snapshot, previous?: SessionModel): SessionModel {
  const same = previous?.sessionId === snap.session_id ? previous : undefined;
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
    pending: same ? same.pending : [],
    requests: [...(snap.open_requests ?? [])],
    ...(snap.system_prompt ? { systemPrompt: snap.system_prompt } : {}),
    ...(snap.system_prompt_fixed ? { systemPromptFixed: true } : {}),
    usage: same ? { ...same.usage } : {},
    ...(same?.processes ? { processes: { ...same.processes } } : {}),
    ...(snap.context_tokens !== undefined ? { contextTokens: snap.context_tokens } : {}),
    version: (previous?.version ?? 0) + 1,
  };
  // Usage stored with each reply: any browser shows it after any reload.
  for (const msg of snap.messages) if (msg.usage) m.usage[msg.message_id] = msg.usage;
  if (same) {
    if (same.pendingModel) m.pendingModel = same.pendingModel;
    // The todo list only moves forward, even across a re-open.
    if (same.todo.revision > m.todo.revision) m.todo = same.todo;
  }
  seedTranscript(m, snap.messages, snap.delegations ?? []);
  markAwaiting(m);
  return m;
}

function delegationIdOf(toolResult: unknown): string | undefined {
  if (typeof toolResult !== "object" || toolResult === null || !("delegation_id" in toolResult)) return undefined;
  const id = toolResult.delegation_id;
  return typeof id === "string" ? id : undefined;
}

/**
 * Messages and delegation cards in transcript order: a card started by `delegate_task` goes right
 * after that tool's card (as it does live); any other (a `/review`, after its command's user
 * message) goes where its `created_at` falls among the messages.
 */
export function seedTranscript(m: SessionModel, messages: Message[], delegations: DelegationSummary[]): void {
  const waiting = [...delegations].sort((a, b) => a.created_at - b.created_at);
  const byToolCall = new Map<string, DelegationSummary>();
  for (const msg of messages) {
    if (msg.role !== "tool" || !msg.tool_call_id) continue;
    const id = delegationIdOf(parseArgs(msg.content));
    const d = id === undefined ? undefined : waiting.find((x) => x.delegation_id === id);
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

function addMessage(m: SessionModel, msg: Message): void {
  if (isDelegationResult(msg)) {
    // A sub-agent's delivered result: its own kind of block, never shown as typed by the user.
    add(m, resultBlock(msg));
    settleCard(m, msg);
    return;
  }
  if (msg.role === "user") {
    const b: Block = { kind: "user", key: msg.message_id, text: msg.content };
    const attachments = msg.parts?.filter(isAttachment);
    if (attachments?.length) b.attachments = attachments;
    if (msg.versions && msg.versions.length > 1) b.versions = [...msg.versions];
    add(m, b);
  } else if (msg.role === "assistant") addAssistant(m, msg);
  else if (msg.role === "tool" && msg.tool_call_id) {
    const tool = get(m, msg.tool_call_id, "tool");
    if (!tool) return;
    tool.done = true;
    const parsed = parseArgs(msg.content);
    if (parsed && typeof parsed === "object" && "error" in parsed && Object.keys(parsed).length === 1) {
      tool.error = String(parsed.error);
    } else tool.result = parsed;
  }
}

function addAssistant(m: SessionModel, msg: Message): void {
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
    if (msg.stop_reason) b.stopReason = msg.stop_reason;
    add(m, b);
  }
  for (const call of msg.tool_calls ?? []) add(m, toolBlock(call));
}
