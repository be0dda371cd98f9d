/**
 * The Store contract, written once and run against every implementation (SQLite today,
 * PostgreSQL next): `storeContract("sqlite", () => new SqliteStore(...))`.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { MessageRow, SessionRow, Store } from "../../src/store/types.js";

export function sessionRow(id: string, over: Partial<SessionRow> = {}): SessionRow {
  return {
    id,
    principal: "default",
    profile: "default",
    title: `title ${id}`,
    parent_session_id: null,
    model: "demo",
    provider: "demo",
    model_config: { provider: "demo", model: "demo" },
    flags: {},
    todo: { revision: 0, items: [] },
    started_at: 1000,
    last_activity_at: 1000,
    ended_at: null,
    end_reason: null,
    seq_reserved: 0,
    active_turn: null,
    ...over,
  };
}

export function messageRow(id: string, sessionId: string, seq: number, over: Partial<MessageRow> = {}): MessageRow {
  return {
    id,
    session_id: sessionId,
    role: "user",
    content: `content ${id}`,
    tool_calls: null,
    tool_call_id: null,
    display_kind: null,
    display_metadata: null,
    status: "complete",
    created_at: 1000 + seq,
    created_seq: seq,
    ...over,
  };
}

export function storeContract(name: string, open: () => Promise<Store>): void {
  describe(`Store contract: ${name}`, () => {
    const opened: Store[] = [];
    const fresh = async () => {
      const s = await open();
      opened.push(s);
      return s;
    };
    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close();
    });

    it("round-trips a session row, including JSON columns and the active turn", async () => {
      const store = await fresh();
      const row = sessionRow("s1", {
        flags: { hidden: true, metadata: { a: 1 } },
        todo: { revision: 2, items: [{ content: "x", status: "pending" }] },
        active_turn: { turn_id: "t1", trace_id: "f".repeat(32) },
      });
      await store.commit([{ op: "session.insert", row }]);
      expect(await store.getSession("s1")).toEqual(row);
      await store.commit([{ op: "session.update", id: "s1", patch: { title: "renamed", active_turn: null } }]);
      expect(await store.getSession("s1")).toMatchObject({ title: "renamed", active_turn: null, flags: row.flags });
      expect(await store.getSession("nope")).toBeNull();
    });

    it("commits a batch atomically: one failing op writes nothing", async () => {
      const store = await fresh();
      await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
      await expect(
        store.commit([
          { op: "event.append", row: { session_id: "s1", seq: 1, type: "x", payload: "{}", turn_id: null, trace_id: null, created_at: 1 } },
          { op: "session.insert", row: sessionRow("s1") }, // duplicate key
        ]),
      ).rejects.toBeDefined();
      expect(await store.readEvents("s1", 0, 10)).toEqual([]);
    });

    it("only raises seq_reserved", async () => {
      const store = await fresh();
      await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
      await store.commit([{ op: "seq.reserve", session_id: "s1", upTo: 100 }]);
      await store.commit([{ op: "seq.reserve", session_id: "s1", upTo: 50 }]);
      expect((await store.getSession("s1"))!.seq_reserved).toBe(100);
    });

    it("reads events in seq order after a cursor, with latest and earliest seqs", async () => {
      const store = await fresh();
      await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
      const ev = (seq: number) => ({
        op: "event.append" as const,
        row: { session_id: "s1", seq, type: "t", payload: `{"n":${seq}}`, turn_id: "tu", trace_id: "tr", created_at: seq },
      });
      await store.commit([ev(5), ev(2), ev(9)]);
      expect((await store.readEvents("s1", 2, 10)).map((e) => e.seq)).toEqual([5, 9]);
      expect((await store.readEvents("s1", 0, 2)).map((e) => e.seq)).toEqual([2, 5]);
      expect(await store.latestEventSeq("s1")).toBe(9);
      expect(await store.earliestEventSeq("s1")).toBe(2);
      expect(await store.latestEventSeq("other")).toBe(0);
    });

    it("pages messages in created_seq order and applies message updates", async () => {
      const store = await fresh();
      await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
      await store.commit([
        { op: "message.insert", row: messageRow("m3", "s1", 30) },
        { op: "message.insert", row: messageRow("m1", "s1", 10) },
        { op: "message.insert", row: messageRow("m2", "s1", 20, { role: "assistant", status: "streaming" }) },
      ]);
      await store.commit([
        { op: "message.update", id: "m2", patch: { content: "done", status: "complete", tool_calls: [{ id: "c", name: "todo", arguments: "{}" }] } },
      ]);
      const all = await store.loadMessages("s1");
      expect(all.map((m) => m.id)).toEqual(["m1", "m2", "m3"]);
      expect(all[1]).toMatchObject({ content: "done", status: "complete", tool_calls: [{ id: "c", name: "todo", arguments: "{}" }] });
      const p1 = await store.listMessages("s1", undefined, 2);
      expect(p1.items.map((m) => m.id)).toEqual(["m1", "m2"]);
      expect(p1.nextCursor).toBe("m2");
      const p2 = await store.listMessages("s1", p1.nextCursor!, 2);
      expect(p2.items.map((m) => m.id)).toEqual(["m3"]);
      expect(p2.nextCursor).toBeNull();
    });

    it("lists sessions by activity with cursor pagination, filtering ended and hidden ones", async () => {
      const store = await fresh();
      await store.commit([
        { op: "session.insert", row: sessionRow("a", { last_activity_at: 10 }) },
        { op: "session.insert", row: sessionRow("b", { last_activity_at: 30 }) },
        { op: "session.insert", row: sessionRow("c", { last_activity_at: 20 }) },
        { op: "session.insert", row: sessionRow("d", { last_activity_at: 40, ended_at: 41, end_reason: "user_close" }) },
        { op: "session.insert", row: sessionRow("e", { last_activity_at: 50, flags: { hidden: true } }) },
        { op: "session.insert", row: sessionRow("f", { last_activity_at: 5, profile: "work" }) },
        { op: "session.insert", row: sessionRow("g", { last_activity_at: 60, principal: "someone-else" }) },
        { op: "message.insert", row: messageRow("m1", "b", 1) },
      ]);
      const q = { principal: "default", limit: 2, includeEnded: false, includeHidden: false };
      const p1 = await store.listSessions(q);
      expect(p1.items.map((i) => i.row.id)).toEqual(["b", "c"]);
      expect(p1.items[0]!.message_count).toBe(1);
      const p2 = await store.listSessions({ ...q, cursor: p1.nextCursor! });
      expect(p2.items.map((i) => i.row.id)).toEqual(["a", "f"]);
      expect(p2.nextCursor).toBeNull();
      const everything = await store.listSessions({ principal: "default", limit: 10, includeEnded: true, includeHidden: true });
      expect(everything.items.map((i) => i.row.id)).toEqual(["e", "d", "b", "c", "a", "f"]);
      const work = await store.listSessions({ ...q, profile: "work" });
      expect(work.items.map((i) => i.row.id)).toEqual(["f"]);
      await expect(store.listSessions({ ...q, cursor: "%%%" })).rejects.toBeInstanceOf(RangeError);
      const theirs = await store.listSessions({ ...q, principal: "someone-else" });
      expect(theirs.items.map((i) => i.row.id)).toEqual(["g"]);
      expect((await store.listOpenSessions()).map((r) => r.id).sort()).toEqual(["a", "b", "c", "e", "f", "g"]);
    });

    it("keeps the first idempotency record for a request id", async () => {
      const store = await fresh();
      await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
      const rec = { session_id: "s1", request_id: "r1", turn_id: "t1", trace_id: "x1", created_at: 1 };
      await store.commit([{ op: "idempotency.put", row: rec }]);
      await store.commit([{ op: "idempotency.put", row: { ...rec, turn_id: "t2" } }]);
      expect(await store.getIdempotency("s1", "r1")).toEqual(rec);
      expect(await store.getIdempotency("s1", "r2")).toBeNull();
      expect(await store.ping()).toBe(true);
    });
  });
}
