/**
 * Versions of a user message (branching): an edit or a regenerate starts a new version of a
 * prompt, and the messages that followed the old one are kept off the active branch. The wire
 * shows a group's versions on the one shown (`Message.versions`, oldest first), so any client —
 * any browser, after any reload — draws the same ‹ n / N ›.
 */
import type { BranchCreatedPayload, BranchSwitchedPayload, Message } from "../../protocol/index.js";
import type { ChatMessage } from "../../agent/provider.js";
import type { MessageRow, VersionRow, WriteOp } from "../../store/types.js";
import type { SessionRuntime } from "./session-runtime.js";

/** What a branching turn writes and continues from (SessionRuntime applies it at the turn's start). */
export interface Fork {
  /** Ride on the new version's `branch.created`. */
  ops: WriteOp[];
  /** The payload, once the new user message has an id. */
  payload(messageId: string): BranchCreatedPayload;
  /** The new user message's `branch_of`. */
  branchOf: string;
  /** The model's history before the new version. */
  history: ChatMessage[];
}

/** A switch of versions, computed from the store (the runtime emits it and adopts the history). */
export interface Switch {
  ops: WriteOp[];
  payload: BranchSwitchedPayload;
  history: ChatMessage[];
}

/** What a runtime asks of branching (sessions/branching/ implements it). */
export interface BranchingHooks {
  /** The checked branch point (a prompt on the active branch, after any compression point). */
  branchPoint(rt: SessionRuntime, messageId: string): Promise<MessageRow>;
  fork(rt: SessionRuntime, fromId: string): Promise<Fork>;
  /** Undefined when that version is shown already. */
  planSwitch(rt: SessionRuntime, messageId: string): Promise<Switch | undefined>;
}

/** Message id → every version of its group, oldest first; only groups of two versions or more. */
export function versionGroups(rows: readonly VersionRow[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const r of rows) {
    const list = groups.get(r.root) ?? [];
    list.push(r.id);
    groups.set(r.root, list);
  }
  const byMessage = new Map<string, string[]>();
  for (const list of groups.values()) {
    if (list.length < 2) continue;
    for (const id of list) byMessage.set(id, list);
  }
  return byMessage;
}

/** Sets `versions` on the user messages that have more than one (in place; returns them). */
export function withVersions(messages: Message[], groups: ReadonlyMap<string, string[]>): Message[] {
  for (const m of messages) {
    const versions = m.role === "user" ? groups.get(m.message_id) : undefined;
    if (versions) m.versions = [...versions];
  }
  return messages;
}
