/**
 * Branching: a new turn from any user message of the active branch (edit and resend: new text;
 * regenerate: the same text), the old branch kept as a previous version, and switching between
 * versions. Durable and evented: the fork rides on its turn (`branch.created`, written with the
 * hide), a switch is a `branch.switched` frame carrying its writes and the messages shown again,
 * so `session.events.since` replays both, and every client draws the same versions after a reload.
 *
 * How it is stored (migration 14): a message off the active branch has `hidden_by` = the version
 * (a user message) that was left when it went off; a later version's user message has `branch_of`
 * = the group's first version. Leaving version V hides every message of the active branch from V
 * on (V included) as hidden by V; showing V again un-hides exactly those. The active branch is a
 * path of the tree whose messages were created in path order, so `created_seq` still orders it,
 * and every read of the transcript (history, Snapshot, session.messages) is the active branch only.
 *
 * Compression copies the active branch only; a branch point at or before the continuation's
 * summary (or in an ancestor session) is refused with 4072 rather than rewriting a summarized past.
 */
import { DisplayKind, ErrorCode, TetherError } from "../../protocol/index.js";
import type { MessageRow, Store } from "../../store/types.js";
import { toChatHistory, toWireMessage } from "../core/messages.js";
import { storage } from "../core/session-access.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import { versionGroups, withVersions, type BranchingHooks, type Fork, type Switch } from "../core/versions.js";

export class Branching implements BranchingHooks {
  constructor(private readonly store: Store) {}

  /** The user message a new version starts from, checked: on the active branch, a prompt, after any compression point. */
  async branchPoint(rt: SessionRuntime, messageId: string): Promise<MessageRow> {
    const row = await storage(() => this.store.getMessage(rt.id, messageId));
    if (!row) {
      for (const ancestor of rt.lineage.filter((id) => id !== rt.id)) {
        if (await storage(() => this.store.getMessage(ancestor, messageId))) {
          throw new TetherError(ErrorCode.BranchBeforeCompression, `Message ${messageId} was summarized by compression (it is in ${ancestor}); branch from a message of this session`, {
            message_id: messageId,
            session_id: ancestor,
          });
        }
      }
      throw new TetherError(ErrorCode.MessageNotFound, `No message ${messageId} in session ${rt.id}`, { message_id: messageId });
    }
    // A steer, a room post, a delivered result or a compression summary is not a prompt to redo.
    if (row.role !== "user" || row.display_kind !== null || row.content === "") {
      throw new TetherError(ErrorCode.NotBranchable, `Message ${messageId} is not a prompt the user wrote (${row.display_kind ?? row.role})`, {
        message_id: messageId,
        role: row.role,
        ...(row.display_kind ? { display_kind: row.display_kind } : {}),
      });
    }
    if (row.hidden_by) {
      throw new TetherError(ErrorCode.NotBranchable, `Message ${messageId} is on a version not shown now: select that version first (session.branch.select)`, {
        message_id: messageId,
        hidden_by: row.hidden_by,
      });
    }
    await this.afterCompression(rt, row, await storage(() => this.store.loadMessages(rt.id)));
    return row;
  }

  /** The writes and history of a new version of `from` (checked again: the turn starts now). */
  async fork(rt: SessionRuntime, fromId: string): Promise<Fork> {
    const from = await this.branchPoint(rt, fromId);
    const rows = await storage(() => this.store.loadMessages(rt.id));
    const prefix = rows.filter((r) => r.created_seq < from.created_seq);
    const hidden = rows.filter((r) => r.created_seq >= from.created_seq).map((r) => r.id);
    const root = from.branch_of ?? from.id;
    const versions = await this.versionsOf(rt, root);
    return {
      ops: [{ op: "messages.hide", session_id: rt.id, from_seq: from.created_seq, hidden_by: from.id }],
      payload: (messageId) => ({
        root_message_id: root,
        message_id: messageId,
        replaced_message_id: from.id,
        versions: [...versions, messageId],
        hidden_message_ids: hidden,
      }),
      branchOf: root,
      history: toChatHistory(prefix),
    };
  }

  /** Showing version `messageId` of its group again; undefined when it is the one shown already. */
  async planSwitch(rt: SessionRuntime, messageId: string): Promise<Switch | undefined> {
    const target = await storage(() => this.store.getMessage(rt.id, messageId));
    if (!target) throw new TetherError(ErrorCode.MessageNotFound, `No message ${messageId} in session ${rt.id}`, { message_id: messageId });
    const root = target.branch_of ?? target.id;
    const all = (await storage(() => this.store.messageVersions(rt.id))).filter((v) => v.root === root);
    const shown = all.find((v) => v.hidden_by === null);
    if (target.role !== "user" || all.length < 2) {
      throw new TetherError(ErrorCode.NotBranchable, `Message ${messageId} has no other version`, { message_id: messageId });
    }
    if (!shown) {
      throw new TetherError(ErrorCode.NotBranchable, `Message ${messageId} belongs to a version not shown now: select that one first`, { message_id: messageId });
    }
    if (shown.id === target.id) return undefined;
    const rows = await storage(() => this.store.loadMessages(rt.id));
    await this.afterCompression(rt, { id: shown.id, created_seq: shown.created_seq }, rows);
    const prefix = rows.filter((r) => r.created_seq < shown.created_seq);
    const hidden = rows.filter((r) => r.created_seq >= shown.created_seq).map((r) => r.id);
    const restored = await storage(() => this.store.loadHidden(rt.id, target.id));
    const groups = versionGroups(await storage(() => this.store.messageVersions(rt.id)));
    const versions = all.map((v) => v.id);
    return {
      // Order matters: hide what is shown first, then show the version (it may sort after it).
      ops: [
        { op: "messages.hide", session_id: rt.id, from_seq: shown.created_seq, hidden_by: shown.id },
        { op: "messages.show", session_id: rt.id, hidden_by: target.id },
      ],
      payload: {
        root_message_id: root,
        message_id: target.id,
        previous_message_id: shown.id,
        versions,
        hidden_message_ids: hidden,
        messages: withVersions(restored.map((r) => toWireMessage({ ...r, hidden_by: null })), groups),
      },
      history: toChatHistory([...prefix, ...restored]),
    };
  }

  /** Every version of group `root` so far, oldest first (the root alone before its first branch). */
  private async versionsOf(rt: SessionRuntime, root: string): Promise<string[]> {
    const ids = (await storage(() => this.store.messageVersions(rt.id))).filter((v) => v.root === root).map((v) => v.id);
    return ids.length > 0 ? ids : [root];
  }

  /** A continuation's head and summary stand for a past compression rewrote: no branch there. */
  private async afterCompression(rt: SessionRuntime, at: Pick<MessageRow, "id" | "created_seq">, rows: readonly MessageRow[]): Promise<void> {
    const summary = rows.find((r) => r.display_kind === DisplayKind.CompressionSummary);
    if (summary && at.created_seq <= summary.created_seq) {
      throw new TetherError(ErrorCode.BranchBeforeCompression, `Message ${at.id} lies before this session's compression point; branch from a message after the summary`, {
        message_id: at.id,
        summary_message_id: summary.id,
      });
    }
  }
}
