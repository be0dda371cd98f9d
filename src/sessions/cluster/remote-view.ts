/**
 * Viewing a session another node owns (scale-out). Any node serves any client: when the session's
 * lease is held by a live sibling, this node does not open a runtime — it serves the session from
 * the shared store (durable frames, transcript) and the bus (the owner's live frames and its recent
 * transient ones), and forwards the owner's frames to its own viewers as they come.
 *
 * - `since(after)` = durable events from the store + every frame still retained in the session's
 *   bus stream, merged by seq (a seq in both is served once), plus snapshots of messages still
 *   streaming, rebuilt from the retained deltas.
 * - Following: a viewer subscribes to the bus after the snapshot's `latest_seq`, so it gets every
 *   later frame once, in seq order, byte-identical to what the owner's own viewers got.
 *
 * Limits (documented in docs/deploy.md): a message whose `message.start` was already trimmed from
 * the stream (longer than the ring) is snapshotted from its delta log up to the snapshot's seq (a
 * delta-log row that straddles that seq is left out: its few deltas show at `message.complete`).
 */
import {
  EncodedJson,
  EventType,
  frameJsonOfNotification,
  isTransientEvent,
  type Frame,
  type MessageSnapshot,
  type SinceResult,
  type Snapshot,
} from "../../protocol/index.js";
import { encodeStoredFrame, fromEventRow, type SinceOptions } from "../../events/index.js";
import { openRequestsOf } from "../views/snapshots.js";
import type { Bus, BusEntry } from "../../events/bus/index.js";
import type { Logger } from "../../lib/logger.js";
import type { EventRow, MessageRow, SessionRow, Store } from "../../store/types.js";
import { toWireMessage } from "../core/messages.js";
import { versionGroups, withVersions } from "../core/versions.js";
import { systemPromptFixed } from "../core/system-prompt.js";
import type { Viewer } from "../core/viewer.js";

export interface RemoteViewDeps {
  store: Store;
  bus: Bus;
  epoch: string;
  logger: Logger;
}

interface Cut {
  /** Frames after the cursor, in seq order: a stored row or a bus entry (never both). */
  items: Array<{ seq: number; row?: EventRow; entry?: BusEntry }>;
  latest: number;
  snapshots: MessageSnapshot[];
}

const SINCE_PAGE = 100_000;

/** A stored message as the snapshots of messages still streaming need it. */
type StreamingRow = Pick<MessageRow, "id" | "role" | "created_seq"> & { status?: MessageRow["status"] };

/** What since() reads from the store, before it reads the bus. */
export interface StoredCut {
  rows: EventRow[];
  /** The session's messages still streaming. */
  messages: StreamingRow[];
}

export class RemoteView {
  /** viewer id → session id → unsubscribe */
  private readonly follows = new Map<string, Map<string, () => void>>();
  private readonly viewers = new Map<string, Viewer>();
  /**
   * The last frame read off the bus and its text. The bus hands one frame to every viewer of the
   * session here in a row, with the same string: it is parsed once, not once per viewer, and the
   * viewers share one frame object (as the owner's own viewers do: the WebSocket frame is then
   * encoded once for all of them, ws-frame.ts).
   */
  private lastWire: string | null = null;
  private lastFrame: Frame | null = null;

  constructor(private readonly deps: RemoteViewDeps) {}

  private frameOf(wire: string): Frame {
    if (wire !== this.lastWire) {
      this.lastFrame = parseFrame(wire);
      this.lastWire = wire;
    }
    return this.lastFrame!;
  }

  async since(sessionId: string, afterSeq: number, opts: SinceOptions = {}, stored?: Promise<StoredCut>): Promise<SinceResult> {
    const cut = await this.collect(sessionId, afterSeq, stored);
    let events = cut.items.map((it) => (it.row ? fromEventRow(it.row, this.deps.epoch) : parseFrame(it.entry!.wire)));
    if (opts.transient === false) events = events.filter((f) => !isTransientEvent(f.type));
    return { events, latest_seq: cut.latest, truncated: false, epoch: this.deps.epoch, snapshots: cut.snapshots };
  }

  /**
   * since() as JSON text: the retained frames are spliced in as the owner encoded them and the
   * stored ones as stored (the owner's sinceJson does the same), not parsed and re-encoded.
   */
  async sinceJson(sessionId: string, afterSeq: number, opts: SinceOptions = {}, stored?: Promise<StoredCut>): Promise<EncodedJson> {
    const cut = await this.collect(sessionId, afterSeq, stored);
    const epochJson = JSON.stringify(this.deps.epoch);
    const sessionJson = JSON.stringify(sessionId);
    const parts: string[] = [];
    for (const it of cut.items) {
      if (it.row) parts.push(encodeStoredFrame(it.row, sessionJson, epochJson));
      else if (opts.transient !== false || !isTransientEvent(frameType(it.entry!.wire) ?? parseFrame(it.entry!.wire).type)) {
        parts.push(frameJsonOfNotification(it.entry!.wire));
      }
    }
    return new EncodedJson(
      `{"events":[`,
      parts,
      `],"latest_seq":${cut.latest},"truncated":false,"epoch":${epochJson},"snapshots":${JSON.stringify(cut.snapshots)}}`,
    );
  }

  /** A Snapshot of a session live on another node, consistent with its `latest_seq`. */
  async snapshot(row: SessionRow, afterSeq?: number): Promise<Snapshot> {
    const [cut, requests] = await Promise.all([this.head(row.id), this.deps.store.requests.unfinishedRequests(row.id)]);
    const rows = afterSeq === undefined ? cut.stored : await this.deps.store.loadMessages(row.id, afterSeq);
    const streaming = new Map(cut.snapshots.map((s) => [s.message_id, s.text]));
    const messages = rows
      .filter((r) => r.created_seq <= cut.latest)
      .map((r) => {
        const m = toWireMessage(r);
        const live = streaming.get(m.message_id);
        if (live !== undefined) {
          m.content = live;
          m.status = "streaming";
        }
        return m;
      });
    withVersions(messages, versionGroups(await this.deps.store.messageVersions(row.id)));
    return {
      session_id: row.id,
      title: row.title,
      profile: row.profile,
      model: row.model,
      provider: row.provider,
      // A node serves a session remotely only when its live owner refused the lease to a resume:
      // held, unexpired and not parked — what `session.list` on any node shows as live.
      state: "live",
      running: row.active_turn !== null,
      latest_seq: cut.latest,
      epoch: this.deps.epoch,
      messages,
      todo: row.todo,
      delegations: [],
      open_requests: openRequestsOf(requests),
      ...(afterSeq !== undefined ? { messages_after_seq: afterSeq } : {}),
      ...(row.flags.system_prompt ? { system_prompt: row.flags.system_prompt } : {}),
      ...(systemPromptFixed(row) ? { system_prompt_fixed: true } : {}),
    };
  }

  /** Sends `viewer` every frame of the session after `afterSeq`, as the owner publishes them. */
  follow(sessionId: string, afterSeq: number, viewer: Viewer): void {
    let mine = this.follows.get(viewer.id);
    if (!mine) {
      mine = new Map();
      this.follows.set(viewer.id, mine);
    }
    mine.get(sessionId)?.();
    this.viewers.set(viewer.id, viewer);
    const off = this.deps.bus.subscribe(sessionId, afterSeq, (_seq, wire) => {
      try {
        viewer.send(this.frameOf(wire), wire);
      } catch (err) {
        this.deps.logger.warn({ err, session_id: sessionId }, "remote viewer send failed");
      }
    });
    mine.set(sessionId, off);
  }

  /** This node's viewers following `sessionId` through the bus. */
  followersOf(sessionId: string): Viewer[] {
    const out: Viewer[] = [];
    for (const [viewerId, mine] of this.follows) {
      const v = this.viewers.get(viewerId);
      if (v && mine.has(sessionId)) out.push(v);
    }
    return out;
  }

  isFollowing(sessionId: string, viewer: Viewer): boolean {
    return this.follows.get(viewer.id)?.has(sessionId) ?? false;
  }

  unfollow(sessionId: string, viewer: Viewer): boolean {
    const mine = this.follows.get(viewer.id);
    const off = mine?.get(sessionId);
    if (!off) return false;
    off();
    mine!.delete(sessionId);
    if (mine!.size === 0) {
      this.follows.delete(viewer.id);
      this.viewers.delete(viewer.id);
    }
    return true;
  }

  unfollowAll(viewer: Viewer): void {
    const mine = this.follows.get(viewer.id);
    if (!mine) return;
    for (const off of mine.values()) off();
    this.follows.delete(viewer.id);
    this.viewers.delete(viewer.id);
  }

  /** Stops following a session for every viewer (this node now owns it, or it ended). */
  unfollowSession(sessionId: string): void {
    for (const [viewerId, mine] of this.follows) {
      const off = mine.get(sessionId);
      if (!off) continue;
      off();
      mine.delete(sessionId);
      if (mine.size === 0) {
        this.follows.delete(viewerId);
        this.viewers.delete(viewerId);
      }
    }
  }

  get followerCount(): number {
    let n = 0;
    for (const m of this.follows.values()) n += m.size;
    return n;
  }

  close(): void {
    for (const mine of this.follows.values()) for (const off of mine.values()) off();
    this.follows.clear();
    this.viewers.clear();
  }

  /**
   * The store half of a since() cut: the events after `afterSeq` and the session's messages still
   * streaming, read together (two pooled connections: one round trip of latency, not two). A caller may start it
   * before it has checked access (node-routing.ts) and pass it to since().
   */
  readStored(sessionId: string, afterSeq: number): Promise<StoredCut> {
    // Only the messages still streaming, not the transcript: a long session's catch-up must not
    // read every message it ever had.
    return Promise.all([this.storedEvents(sessionId, afterSeq), this.deps.store.streamingMessages(sessionId)]).then(([rows, messages]) => ({
      rows,
      messages,
    }));
  }

  private async collect(sessionId: string, afterSeq: number, storedCut = this.readStored(sessionId, afterSeq)): Promise<Cut> {
    // Store first, bus second: the owner publishes a durable frame only after committing it, so
    // anything published before our bus read is in the store or in what the bus returns.
    const { rows, messages: stored } = await storedCut;
    const retained = await this.deps.bus.readAfter(sessionId, 0);
    const items: Cut["items"] = [];
    let i = 0;
    let j = 0;
    while (j < retained.length && retained[j]!.seq <= afterSeq) j++;
    while (i < rows.length || j < retained.length) {
      const rs = i < rows.length ? rows[i]!.seq : Infinity;
      const bs = j < retained.length ? retained[j]!.seq : Infinity;
      if (rs < bs) items.push({ seq: rs, row: rows[i++]! });
      else if (bs < rs) items.push({ seq: bs, entry: retained[j++]! });
      else {
        items.push({ seq: bs, entry: retained[j++]! });
        i++;
      }
    }
    const latest = Math.max(afterSeq, items.at(-1)?.seq ?? 0);
    return { items, latest, snapshots: await this.streamingSnapshots(sessionId, retained, latest, stored) };
  }

  private async storedEvents(sessionId: string, afterSeq: number): Promise<EventRow[]> {
    const rows: EventRow[] = [];
    let from = afterSeq;
    for (;;) {
      const page = await this.deps.store.readEvents(sessionId, from, SINCE_PAGE);
      rows.push(...page);
      if (page.length < SINCE_PAGE) return rows;
      from = page[page.length - 1]!.seq;
    }
  }

  /**
   * The session's latest seq and streaming messages, for a Snapshot. Its messages are read after
   * the bus: every message created at or before `latest` is then in `stored`.
   */
  private async head(sessionId: string): Promise<{ latest: number; snapshots: MessageSnapshot[]; stored: MessageRow[] }> {
    const durable = await this.deps.store.latestEventSeq(sessionId);
    const retained = await this.deps.bus.readAfter(sessionId, 0);
    const latest = Math.max(durable, retained.at(-1)?.seq ?? 0);
    const stored = await this.deps.store.loadMessages(sessionId);
    return { latest, stored, snapshots: await this.streamingSnapshots(sessionId, retained, latest, stored) };
  }

  /**
   * Messages still streaming at `latest`, rebuilt from the retained deltas (or the delta log).
   * `stored`: the session's messages (or those still streaming), read before the bus for since()
   * (a message that started after that read has its message.start in the retained frames).
   */
  private async streamingSnapshots(sessionId: string, retained: BusEntry[], latest: number, stored: StreamingRow[]): Promise<MessageSnapshot[]> {
    const open = new Map<string, MessageSnapshot>();
    const completed = new Set<string>();
    // Starts and completions first (few): deltas are parsed only when some message is still open,
    // which, for a session between turns, none is.
    const deltas: BusEntry[] = [];
    for (const e of retained) {
      if (e.seq > latest) break;
      // Only the message frames are parsed: the rest (tool, todo, turn frames) say nothing here.
      const type = frameType(e.wire);
      if (type !== undefined && !SNAPSHOT_FRAMES.has(type)) continue;
      if (type === EventType.MessageDelta || type === EventType.ReasoningDelta) {
        deltas.push(e);
        continue;
      }
      const f = parseFrame(e.wire) as Frame<any>;
      if (f.type === EventType.MessageStart && f.payload?.role === "assistant") {
        const s: MessageSnapshot = { message_id: f.payload.message_id, role: "assistant", text: "", reasoning: "", as_of_seq: latest };
        if (f.turn_id !== undefined) s.turn_id = f.turn_id;
        open.set(s.message_id, s);
      } else if (f.type === EventType.MessageDelta || f.type === EventType.ReasoningDelta) {
        deltas.push(e);
      } else if (f.type === EventType.MessageComplete) {
        open.delete(f.payload?.message_id);
        completed.add(f.payload?.message_id);
      }
    }
    if (open.size > 0) {
      for (const e of deltas) {
        const f = parseFrame(e.wire) as Frame<any>;
        const s = open.get(f.payload?.message_id);
        if (!s) continue;
        if (f.type === EventType.MessageDelta) s.text += f.payload.text;
        else s.reasoning += f.payload.text;
      }
    }
    // A message that started before the retained window: its delta log up to `latest` (never past
    // it: the viewer follows the bus from there, so a later delta must not be in the snapshot too).
    const older = stored.filter(
      (r) => r.role === "assistant" && (r.status ?? "streaming") === "streaming" && r.created_seq <= latest && !open.has(r.id) && !completed.has(r.id),
    );
    const logged = older.length > 0 ? await this.deps.store.streamedText(sessionId, latest) : new Map<string, string>();
    for (const r of older) {
      open.set(r.id, { message_id: r.id, role: "assistant", text: logged.get(r.id) ?? "", reasoning: "", as_of_seq: latest });
    }
    return [...open.values()];
  }
}

const SNAPSHOT_FRAMES: ReadonlySet<string> = new Set([
  EventType.MessageStart,
  EventType.MessageDelta,
  EventType.ReasoningDelta,
  EventType.MessageComplete,
]);

/** A frame's type read off its wire text (encoders write it first), without parsing the frame. */
const TYPE_AT_START = /^\{"jsonrpc":"2\.0","method":"event","params":\{"type":"([^"\\]+)"/;
function frameType(wire: string): string | undefined {
  return TYPE_AT_START.exec(wire)?.[1];
}

function parseFrame(wire: string): Frame {
  return JSON.parse(frameJsonOfNotification(wire)) as Frame;
}
