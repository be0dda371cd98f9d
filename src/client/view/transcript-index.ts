/**
 * Block bookkeeping of a SessionModel: the key → block index kept beside the model (not part of
 * it, so a model stays plain data), and the few operations every rule uses: add once per key,
 * find by key and kind, remove.
 */
import type { Message } from "../../protocol/index.js";
import type { Block, BlockOf, SessionModel } from "./transcript-types.js";

/** Internal indexes kept beside the model (not rendered). */
export interface Index {
  byKey: Map<string, Block>;
  turnInputs: Map<string, string>;
  startedTurns: Set<string>;
  /** `${delegation_id}#${task_index}` → the `ts` of the frame that said the task started running. */
  taskStarts: Map<string, number>;
  /** New user message id → its versions, from a `branch.created` that came before the message. */
  versionsOf: Map<string, string[]>;
}

const indexes = new WeakMap<SessionModel, Index>();

export function idx(m: SessionModel): Index {
  let i = indexes.get(m);
  if (!i) {
    i = { byKey: new Map(), turnInputs: new Map(), startedTurns: new Set(), taskStarts: new Map(), versionsOf: new Map() };
    for (const b of m.blocks) i.byKey.set(b.key, b);
    indexes.set(m, i);
  }
  return i;
}

/** Adds `block` unless one with its key is shown (then that one is returned): a key is shown once. */
export function add<B extends Block>(m: SessionModel, block: B, after?: string): Block {
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

function isKind<K extends Block["kind"]>(b: Block, kind: K): b is BlockOf<K> {
  return b.kind === kind;
}

export function get<K extends Block["kind"]>(m: SessionModel, key: string, kind: K): BlockOf<K> | undefined {
  const b = idx(m).byKey.get(key);
  return b && isKind(b, kind) ? b : undefined;
}

/** The block of `key` and `kind`, added as `make()` when none is shown. */
export function getOrAdd<K extends Block["kind"]>(m: SessionModel, key: string, kind: K, make: () => BlockOf<K>, after?: string): BlockOf<K> {
  const shown = get(m, key, kind);
  if (shown) return shown;
  const b = make();
  add(m, b, after);
  return b;
}

export function removeBlock(m: SessionModel, key: string): void {
  idx(m).byKey.delete(key);
  m.blocks = m.blocks.filter((b) => b.key !== key);
}

export function parseArgs(text: string): unknown {
  try {
    return text.trim() === "" ? {} : JSON.parse(text);
  } catch {
    return text;
  }
}

export function assistantBlock(key: string, text: string, status: Message["status"], turnId?: string): BlockOf<"assistant"> {
  const b: BlockOf<"assistant"> = { kind: "assistant", key, text, reasoning: "", status };
  if (turnId) b.turnId = turnId;
  return b;
}

export function toolBlock(call: { id: string; name: string; arguments: string }): BlockOf<"tool"> {
  return { kind: "tool", key: call.id, name: call.name, args: parseArgs(call.arguments), done: false };
}

/** The text of the last user block before position `before` (the prompt a Retry sends again). */
export function withInput(m: SessionModel): { input?: string } {
  for (let k = m.blocks.length - 1; k >= 0; k--) {
    const b = m.blocks[k]!;
    if (b.kind === "user") return { input: b.text };
  }
  return {};
}

/** Tool cards whose call an open approval names say so (instead of "running"). */
export function markAwaiting(m: SessionModel): void {
  const waiting = new Set(m.requests.flatMap((r) => (r.kind === "approval" && r.call_id ? [r.call_id] : [])));
  for (const b of m.blocks) if (b.kind === "tool") b.awaiting = waiting.has(b.key) && !b.done;
}
