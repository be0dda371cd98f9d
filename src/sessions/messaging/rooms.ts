/**
 * Rooms: several bots in one conversation. A room is a session of its own (the shared transcript,
 * viewable and resumable like any other, in the profile the call names); its members are profiles,
 * kept in the room's flags. Each member answers from its own hidden session in its own profile,
 * created once with `room_plumbing` (so it always runs on that profile's current config), and is
 * given the room messages it has not seen yet as the prompt of one turn.
 *
 * Who answers a post: the members it names (`@name`), else every member once, in member order (so
 * a later member sees the earlier replies). A member's reply wakes only the members it names —
 * never itself — and only up to `messaging.room_hop_limit` hops from the user's post: members
 * cannot answer each other forever. The posts of one room are answered one after another.
 */
import { DisplayKind, ErrorCode, TetherError, type Message, type RoomInfo, type RoomMemberInfo as RoomMember, type RoomPostResult, type RoomReplyMetadata } from "../../protocol/index.js";
import type { Logger } from "../../lib/logger.js";
import type { MessageRow, RoomFlags } from "../../store/types.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import { internalCaller, type Caller } from "../core/types.js";
import { entryOfProfile, findEntry, mentionsIn, type BotEntry, type Directory } from "./directory.js";
import { knownId, type SessionWork } from "./session-work.js";

export interface RoomsDeps {
  directory: Directory;
  logger: Logger;
  hopLimit: () => number;
}

interface Wake {
  member: BotEntry;
  hop: number;
}

export class Rooms {
  /** Per room: the chain its posts are answered on, one after another. */
  private readonly chains = new Map<string, Promise<void>>();

  constructor(private readonly deps: RoomsDeps) {}

  async create(caller: Caller, profile: string | undefined, title: string | undefined, members: string[]): Promise<RoomInfo> {
    const wing = await this.deps.directory.wing(profile ?? "default");
    const entries = this.resolveMembers(members, "members");
    const id = await this.newRoomId(wing);
    const room: RoomFlags = { members: entries.map((e) => e.profile), seen: {} };
    const name = title ?? `Room: ${entries.map((e) => e.name).join(", ")}`;
    await wing.ensure(caller, id, { title: name, metadata: { room: true } });
    await wing.with(caller, id, (rt) => wing.setFlags(rt, { ...rt.row.flags, room }));
    return this.info(id, name, room);
  }

  async members(caller: Caller, profile: string | undefined, roomId: string, change: { add?: string[]; remove?: string[] }): Promise<RoomInfo> {
    const wing = await this.deps.directory.wing(profile ?? "default");
    return wing.with(caller, roomId, async (rt) => {
      const room = roomOf(rt);
      let list = [...room.members];
      if (change.add) for (const e of this.resolveMembers(change.add, "members")) if (!list.includes(e.profile)) list.push(e.profile);
      if (change.remove) {
        const gone = this.resolveMembers(change.remove, "members").map((e) => e.profile);
        list = list.filter((p) => !gone.includes(p));
      }
      const next: RoomFlags = { members: list, seen: room.seen };
      await wing.setFlags(rt, { ...rt.row.flags, room: next });
      return this.info(rt.id, rt.row.title, next);
    });
  }

  /**
   * Appends the user's post and starts the answers (in the background, on the room's chain).
   * Resolves once the post is stored, naming who will answer.
   */
  async post(caller: Caller, profile: string | undefined, roomId: string, text: string): Promise<RoomPostResult> {
    const wing = await this.deps.directory.wing(profile ?? "default");
    const { posted, wakes, id } = await wing.with(caller, roomId, async (rt) => {
      const room = roomOf(rt);
      const members = room.members.map((p) => entryOfProfile(this.deps.directory, p));
      const named = this.named(text, members);
      const wakes: Wake[] = (named.length ? named : members).map((member) => ({ member, hop: 1 }));
      const posted = await wing.append(rt, { role: "user", content: text, display_kind: DisplayKind.RoomPost, display_metadata: { room_id: rt.id, from: "user" } });
      return { posted, wakes, id: rt.id };
    });
    this.enqueue(id, () => this.answerAll(caller, wing, id, wakes));
    return { message_id: posted.message_id, responders: wakes.map((w) => ({ profile: w.member.profile, name: w.member.name })) };
  }

  async messages(caller: Caller, profile: string | undefined, roomId: string, after: string | undefined, limit: number | undefined): Promise<{ messages: Message[]; next_cursor: string | null }> {
    const wing = await this.deps.directory.wing(profile ?? "default");
    return wing.with(caller, roomId, async (rt) => {
      roomOf(rt);
      const page = await wing.store.listMessages(rt.id, after, limit ?? 100);
      return { messages: page.items.map(toMessage), next_cursor: page.nextCursor };
    });
  }

  /** Resolves when every post answered so far in this room is answered (tests, shutdown). */
  async idle(roomId: string): Promise<void> {
    while (this.chains.has(roomId)) await this.chains.get(roomId);
  }

  private enqueue(roomId: string, work: () => Promise<void>): void {
    const prev = this.chains.get(roomId) ?? Promise.resolve();
    const next = prev
      .then(work)
      .catch((err: unknown) => this.deps.logger.error({ err, session_id: roomId }, "room answers failed"))
      .finally(() => {
        if (this.chains.get(roomId) === next) this.chains.delete(roomId);
      });
    this.chains.set(roomId, next);
  }

  /** Answers wake by wake; a reply naming other members wakes them one hop further, within the limit. */
  private async answerAll(caller: Caller, wing: SessionWork, roomId: string, first: Wake[]): Promise<void> {
    const queue = [...first];
    for (let wake = queue.shift(); wake; wake = queue.shift()) {
      const reply = await this.answer(caller, wing, roomId, wake).catch((err: unknown) => {
        this.deps.logger.warn({ err, session_id: roomId, member: wake!.member.profile }, "a room member could not answer");
        return null;
      });
      if (!reply || wake.hop >= this.deps.hopLimit()) continue;
      const members = await wing.with(caller, roomId, async (rt) => roomOf(rt).members.map((p) => entryOfProfile(this.deps.directory, p)));
      for (const m of this.named(reply, members)) {
        if (m.profile === wake.member.profile) continue;
        if (!queue.some((q) => q.member.profile === m.profile)) queue.push({ member: m, hop: wake.hop + 1 });
      }
    }
  }

  /** One member's turn: the room messages it has not seen, its answer appended to the room. */
  private async answer(caller: Caller, wing: SessionWork, roomId: string, wake: Wake): Promise<string | null> {
    const { member } = wake;
    const context = await wing.with(caller, roomId, async (rt) => {
      const room = roomOf(rt);
      if (!room.members.includes(member.profile)) return null; // removed meanwhile
      const rows = await wing.store.loadMessages(rt.id, room.seen[member.profile] ?? 0);
      const names = room.members.map((p) => entryOfProfile(this.deps.directory, p).name);
      return { title: rt.row.title, names, rows, upTo: rt.log.latestSeq };
    });
    if (!context) return null;
    const memberWing = await this.deps.directory.wing(member.profile);
    const memberId = knownId("ses_room", roomId, member.profile);
    // The answers of a post the user made: the gateway's work, admitted with the post.
    const worker = internalCaller(caller.principal, "room");
    await memberWing.ensure(worker, memberId, { hidden: true, room_plumbing: true, title: `${context.title} (${member.name})` });
    const answer = await memberWing.with(worker, memberId, (rt) => memberWing.ask(rt, "room", promptFor(member, context.title, context.names, context.rows)));
    if (!answer.ok) {
      this.deps.logger.warn({ session_id: roomId, member: member.profile }, "a room member's turn did not complete; no reply");
      return null;
    }
    const metadata: RoomReplyMetadata = { room_id: roomId, member: member.profile, name: member.name, hop: wake.hop, member_session_id: memberId };
    await wing.with(caller, roomId, (rt) =>
      wing.append(rt, {
        role: "assistant",
        content: answer.text,
        display_kind: DisplayKind.RoomReply,
        display_metadata: { ...metadata },
        // The member has seen everything up to its own reply: the watermark moves in the reply's transaction.
        ops: ({ seq }) => {
          const room = roomOf(rt);
          const next: RoomFlags = { members: room.members, seen: { ...room.seen, [member.profile]: Math.max(seq, context.upTo) } };
          return [rt.flagsChange({ ...rt.row.flags, room: next })];
        },
      }),
    );
    return answer.text;
  }

  /** The members a text names (`@name` or `@profile`), in mention order. */
  private named(text: string, members: BotEntry[]): BotEntry[] {
    const out: BotEntry[] = [];
    for (const n of mentionsIn(text)) {
      const m = members.find((e) => e.name === n) ?? members.find((e) => e.profile === n);
      if (m && !out.includes(m)) out.push(m);
    }
    return out;
  }

  private resolveMembers(names: string[], path: string): BotEntry[] {
    const out: BotEntry[] = [];
    names.forEach((n, i) => {
      const e = findEntry(this.deps.directory, n);
      if (!e) {
        const known = this.deps.directory.entries().map((x) => x.name);
        throw new TetherError(ErrorCode.InvalidParams, `Invalid params: no profile or bot named "${n}"`, {
          issues: [{ path: `${path}.${i}`, message: `not one of: ${known.join(", ")}` }],
        });
      }
      if (!out.some((o) => o.profile === e.profile)) out.push(e);
    });
    return out;
  }

  private async newRoomId(wing: SessionWork): Promise<string> {
    return wing.deps.ids.next("ses");
  }

  private info(id: string, title: string, room: RoomFlags): RoomInfo {
    return { room_id: id, title, members: room.members.map((p) => ({ profile: p, name: entryOfProfile(this.deps.directory, p).name })) };
  }
}

function roomOf(rt: SessionRuntime): RoomFlags {
  const room = rt.row.flags.room;
  if (!room) throw new TetherError(ErrorCode.NotARoom, `Session ${rt.id} is not a room`, { session_id: rt.id });
  return room;
}

/** The prompt of a member's turn: where it is, who is there, and what was said since it last spoke. */
function promptFor(member: BotEntry, title: string, names: string[], rows: MessageRow[]): string {
  const lines = rows.filter((r) => r.content).map((r) => `${speaker(r)}: ${r.content}`);
  return [
    `[Room "${title}" — you are ${member.name}; members: ${names.join(", ")}. New in the room since you last spoke:]`,
    ...lines,
    `[Answer the room as ${member.name}. Mention a member as @name only to ask them something.]`,
  ].join("\n");
}

function speaker(r: MessageRow): string {
  if (r.display_kind === DisplayKind.RoomReply && typeof r.display_metadata?.name === "string") return r.display_metadata.name;
  return r.role === "user" ? "user" : r.role;
}

function toMessage(r: MessageRow): Message {
  const m: Message = { message_id: r.id, role: r.role, content: r.content, status: r.status, created_at: r.created_at };
  if (r.display_kind) m.display_kind = r.display_kind;
  if (r.display_metadata) m.display_metadata = r.display_metadata;
  return m;
}
