/**
 * The Store contract, written once and run against every implementation (SQLite today,
 * PostgreSQL next): `storeContract("sqlite", () => new SqliteStore(...))`.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  AlreadyDeliveredError,
  DelegationLostError,
  EnvelopeClaimLostError,
  type A2ATaskRow,
  type EnvelopeRow,
  FenceError,
  RequestStateError,
  type DelegationRow,
  type ProcessRow,
  type RequestRow,
  type MessageRow,
  type SessionRow,
  type Store,
  type WriteOp,
} from "../../src/store/types.js";

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

    it("refuses a write op it does not know, and the whole batch with it (never drops it silently)", async () => {
      const store = await fresh();
      await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
      const unknown = { op: "session.teleport", id: "s1" } as unknown as WriteOp;
      await expect(
        store.commit([
          { op: "event.append", row: { session_id: "s1", seq: 1, type: "x", payload: "{}", turn_id: null, trace_id: null, created_at: 1 } },
          unknown,
        ]),
      ).rejects.toThrow(/unsupported write op session\.teleport/);
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
      // Backwards from a cursor, newest first, for a reader that needs only the end.
      expect((await store.readEventsBefore("s1", Number.MAX_SAFE_INTEGER, 2)).map((e) => e.seq)).toEqual([9, 5]);
      expect((await store.readEventsBefore("s1", 5, 10)).map((e) => e.seq)).toEqual([2]);
      expect(await store.readEventsBefore("other", 100, 10)).toEqual([]);
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
      expect((await store.loadMessages("s1", 10)).map((m) => m.id)).toEqual(["m2", "m3"]);
      expect(all[1]).toMatchObject({ content: "done", status: "complete", tool_calls: [{ id: "c", name: "todo", arguments: "{}" }] });
      const p1 = await store.listMessages("s1", undefined, 2);
      expect(p1.items.map((m) => m.id)).toEqual(["m1", "m2"]);
      expect(p1.nextCursor).toBe("m2");
      const p2 = await store.listMessages("s1", p1.nextCursor!, 2);
      expect(p2.items.map((m) => m.id)).toEqual(["m3"]);
      expect(p2.nextCursor).toBeNull();
    });

    it("lists a session's messages still streaming, without their text, in transcript order, off-branch ones left out", async () => {
      const store = await fresh();
      await store.commit([{ op: "session.insert", row: sessionRow("s1") }, { op: "session.insert", row: sessionRow("s2") }]);
      const streaming = (id: string, sid: string, seq: number) =>
        ({ op: "message.insert", row: messageRow(id, sid, seq, { role: "assistant", status: "streaming", content: "" }) }) as const;
      await store.commit([
        { op: "message.insert", row: messageRow("u1", "s1", 1) },
        streaming("a2", "s1", 4),
        streaming("a1", "s1", 2),
        streaming("hid", "s1", 6),
        streaming("other", "s2", 3),
        { op: "delta.append", session_id: "s1", message_id: "a1", seq: 3, text: "not read here" },
      ]);
      await store.commit([{ op: "messages.hide", session_id: "s1", from_seq: 6, hidden_by: "u1" }]);
      expect(await store.streamingMessages("s1")).toEqual([
        { id: "a1", role: "assistant", created_seq: 2 },
        { id: "a2", role: "assistant", created_seq: 4 },
      ]);
      await store.commit([{ op: "message.update", id: "a1", patch: { status: "complete", content: "done" } }]);
      expect((await store.streamingMessages("s1")).map((m) => m.id)).toEqual(["a2"]);
      expect(await store.streamingMessages("nope")).toEqual([]);
    });

    it("keeps versions apart (branching): hide from a seq, show what a version hid, versions by group, in one transaction", async () => {
      const store = await fresh();
      await store.commit([{ op: "session.insert", row: sessionRow("s1") }, { op: "session.insert", row: sessionRow("s2") }]);
      // u1 a1 u2 a2 — then u2 edited as v2 (u2b a2b) — then back to u2.
      await store.commit([
        { op: "message.insert", row: messageRow("u1", "s1", 1) },
        { op: "message.insert", row: messageRow("a1", "s1", 2, { role: "assistant" }) },
        { op: "message.insert", row: messageRow("u2", "s1", 3) },
        { op: "message.insert", row: messageRow("a2", "s1", 4, { role: "assistant" }) },
        { op: "message.insert", row: messageRow("x1", "s2", 3) },
      ]);
      await store.commit([
        { op: "messages.hide", session_id: "s1", from_seq: 3, hidden_by: "u2" },
        { op: "message.insert", row: messageRow("u2b", "s1", 5, { branch_of: "u2" }) },
        { op: "message.insert", row: messageRow("a2b", "s1", 6, { role: "assistant" }) },
      ]);
      const ids = async () => (await store.loadMessages("s1")).map((m) => m.id);
      expect(await ids()).toEqual(["u1", "a1", "u2b", "a2b"]);
      expect((await store.listMessages("s1", undefined, 10)).items.map((m) => m.id)).toEqual(["u1", "a1", "u2b", "a2b"]);
      expect((await store.loadMessages("s1", 2)).map((m) => m.id)).toEqual(["u2b", "a2b"]);
      expect((await store.loadMessages("s2")).map((m) => m.id)).toEqual(["x1"]);
      expect(await store.getMessage("s1", "a2")).toMatchObject({ id: "a2", hidden_by: "u2" });
      expect(await store.getMessage("s1", "u2b")).toMatchObject({ branch_of: "u2" });
      expect((await store.getMessage("s1", "u1"))?.hidden_by).toBeUndefined();
      expect(await store.getMessage("s2", "u1")).toBeNull();
      expect((await store.loadHidden("s1", "u2")).map((m) => m.id)).toEqual(["u2", "a2"]);
      expect(await store.messageVersions("s1")).toEqual([
        { id: "u2", root: "u2", hidden_by: "u2", created_seq: 3 },
        { id: "u2b", root: "u2", hidden_by: null, created_seq: 5 },
      ]);
      expect(await store.messageVersions("s2")).toEqual([]);
      const listed = await store.listSessions({ principal: "default", limit: 10, includeEnded: true, includeHidden: true });
      expect(listed.items.find((i) => i.row.id === "s1")?.message_count).toBe(4);
      // Switch back: hide the shown version first, then show the one asked for.
      await store.commit([
        { op: "messages.hide", session_id: "s1", from_seq: 5, hidden_by: "u2b" },
        { op: "messages.show", session_id: "s1", hidden_by: "u2" },
      ]);
      expect(await ids()).toEqual(["u1", "a1", "u2", "a2"]);
      expect((await store.loadHidden("s1", "u2b")).map((m) => m.id)).toEqual(["u2b", "a2b"]);
      // A failing op in the batch leaves every hide undone.
      await expect(
        store.commit([
          { op: "messages.hide", session_id: "s1", from_seq: 0, hidden_by: "u1" },
          { op: "session.insert", row: sessionRow("s1") },
        ]),
      ).rejects.toThrow();
      expect(await ids()).toEqual(["u1", "a1", "u2", "a2"]);
    });

    it("reads a streaming message's text from its delta log, in seq order, until message.complete compacts it", async () => {
      const store = await fresh();
      await store.commit([{ op: "session.insert", row: sessionRow("s1") }, { op: "session.insert", row: sessionRow("s2") }]);
      const streaming = { role: "assistant" as const, status: "streaming" as const, content: "" };
      await store.commit([
        { op: "message.insert", row: messageRow("u1", "s1", 1) },
        { op: "message.insert", row: messageRow("a1", "s1", 2, streaming) },
        { op: "message.insert", row: messageRow("a2", "s2", 2, streaming) },
        // Rows arrive out of seq order within a commit; the text is joined by seq.
        { op: "delta.append", session_id: "s1", message_id: "a1", seq: 5, text: " 2 3" },
        { op: "delta.append", session_id: "s1", message_id: "a1", seq: 3, text: "1" },
        { op: "delta.append", session_id: "s2", message_id: "a2", seq: 3, text: "other session" },
      ]);
      await store.commit([{ op: "delta.append", session_id: "s1", message_id: "a1", seq: 9, text: " ünï\u2028" }]);
      const text = "1 2 3 ünï\u2028";
      expect((await store.loadMessages("s1")).map((m) => m.content)).toEqual(["content u1", text]);
      expect((await store.loadMessages("s1", 1)).map((m) => m.content)).toEqual([text]);
      expect((await store.listMessages("s1", undefined, 10)).items[1]).toMatchObject({ id: "a1", content: text, status: "streaming" });
      expect((await store.loadMessages("s2"))[0]!.content).toBe("other session");
      // Bounded by seq for a reader that must not run ahead of the seq it serves.
      expect(await store.streamedText("s1", 5)).toEqual(new Map([["a1", "1 2 3"]]));
      expect(await store.streamedText("s1", 4)).toEqual(new Map([["a1", "1"]]));
      expect(await store.streamedText("s1")).toEqual(new Map([["a1", text]]));
      // message.complete writes the full text and drops the log in the same transaction.
      await store.commit([
        { op: "message.update", id: "a1", patch: { content: "final", status: "complete" } },
        { op: "delta.compact", session_id: "s1", message_id: "a1" },
      ]);
      expect((await store.loadMessages("s1"))[1]).toMatchObject({ content: "final", status: "complete" });
      // Only messages still streaming have a log; the other session's is untouched.
      expect(await store.streamedText("s1")).toEqual(new Map());
      expect((await store.loadMessages("s2"))[0]!.content).toBe("other session");
    });

    it("lists sessions the gateway ended for a recoverable reason by default; those ended for good only when asked", async () => {
      const store = await fresh();
      await store.commit([
        { op: "session.insert", row: sessionRow("open", { last_activity_at: 10 }) },
        { op: "session.insert", row: sessionRow("reaped", { last_activity_at: 20, ended_at: 21, end_reason: "orphan_reap" }) },
        { op: "session.insert", row: sessionRow("stopped", { last_activity_at: 30, ended_at: 31, end_reason: "shutdown" }) },
        { op: "session.insert", row: sessionRow("closed", { last_activity_at: 40, ended_at: 41, end_reason: "user_close" }) },
        { op: "session.insert", row: sessionRow("rotated", { last_activity_at: 50, ended_at: 51, end_reason: "compression" }) },
        { op: "session.insert", row: sessionRow("plumbing", { last_activity_at: 60, ended_at: 61, end_reason: "idle_ttl", flags: { hidden: true } }) },
      ]);
      const q = { principal: "default", limit: 10, includeEnded: false, includeHidden: false };
      expect((await store.listSessions(q)).items.map((i) => i.row.id)).toEqual(["stopped", "reaped", "open"]);
      expect((await store.listSessions({ ...q, includeEnded: true })).items.map((i) => i.row.id)).toEqual(["rotated", "closed", "stopped", "reaped", "open"]);
      expect((await store.listSessions({ ...q, includeHidden: true })).items.map((i) => i.row.id)).toEqual(["plumbing", "stopped", "reaped", "open"]);
    });

    it("searches titles and message contents (case-insensitive, % and _ literal), and lists archived sessions apart", async () => {
      const store = await fresh();
      await store.commit([
        { op: "session.insert", row: sessionRow("t", { last_activity_at: 10, title: "Release PLANNING" }) },
        { op: "session.insert", row: sessionRow("c", { last_activity_at: 20, title: "chat" }) },
        { op: "session.insert", row: sessionRow("p", { last_activity_at: 30, title: "100% sure" }) },
        { op: "session.insert", row: sessionRow("arch", { last_activity_at: 40, title: "old planning", flags: { archived: true } }) },
        { op: "session.insert", row: sessionRow("x", { last_activity_at: 50, title: "planning", principal: "someone-else" }) },
        { op: "message.insert", row: messageRow("m1", "c", 1, { content: "let us plan the planning meeting" }) },
        { op: "message.insert", row: messageRow("m2", "p", 1, { content: "nothing here" }) },
      ]);
      const q = { principal: "default", limit: 10, includeEnded: false, includeHidden: false };
      const ids = async (over: object) => (await store.listSessions({ ...q, ...over })).items.map((i) => i.row.id);
      expect(await ids({ search: "planning" })).toEqual(["arch", "c", "t"]);
      expect(await ids({ search: "planning", archived: false })).toEqual(["c", "t"]);
      expect(await ids({ search: "planning", archived: true })).toEqual(["arch"]);
      expect(await ids({ archived: false })).toEqual(["p", "c", "t"]);
      expect(await ids({ search: "0%" })).toEqual(["p"]);
      expect(await ids({ search: "_" })).toEqual([]);
      expect(await ids({ search: "PLAN THE" })).toEqual(["c"]);
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

    describe("leases and heartbeats", () => {
      const beat = (id: string, at: number) => ({ id, pid: 1, host: "h", started_at: 0, last_beat: at });
      const req = (owner: string, now: number, over: Record<string, unknown> = {}) => ({
        session_id: "s1",
        owner,
        now,
        ttlMs: 1000,
        deadBefore: now - 3000,
        takeDetached: false,
        ...over,
      });

      it("grants a free lease, refuses a live holder, and takes over an expired or dead one with a new token", async () => {
        const store = await fresh();
        await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
        await store.beat(beat("A", 10_000), 11_000);
        await store.beat(beat("B", 10_000), 11_000);
        expect(await store.acquireLease(req("A", 10_000))).toEqual({ acquired: true, token: 1, from: null });
        expect(await store.acquireLease(req("A", 10_100))).toEqual({ acquired: true, token: 1, from: null });
        const refused = await store.acquireLease(req("B", 10_200));
        expect(refused).toMatchObject({ acquired: false, holder: { owner: "A", token: 1 } });
        // A stops beating: its lease expires and B takes it over with token 2.
        const taken = await store.acquireLease(req("B", 12_000));
        expect(taken).toMatchObject({ acquired: true, token: 2, from: { owner: "A", token: 1 } });
        expect(await store.getLease("s1")).toMatchObject({ owner: "B", token: 2, expires_at: 13_000, detached: false });
      });

      it("lets a live owner's detached lease be taken only when asked to", async () => {
        const store = await fresh();
        await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
        await store.beat(beat("A", 10_000), 11_000);
        await store.beat(beat("B", 10_000), 11_000);
        await store.acquireLease(req("A", 10_000));
        await store.setLeaseDetached("s1", "A", 1, true);
        expect((await store.acquireLease(req("B", 10_100))).acquired).toBe(false);
        expect(await store.acquireLease(req("B", 10_100, { takeDetached: true }))).toMatchObject({ acquired: true, token: 2 });
      });

      it("fails a write carrying a stale fencing token, and the whole transaction with it", async () => {
        const store = await fresh();
        await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
        await store.beat(beat("A", 10_000), 11_000);
        await store.acquireLease(req("A", 10_000));
        const ev = { session_id: "s1", seq: 1, type: "x", payload: "{}", turn_id: null, trace_id: null, created_at: 1 };
        await store.commit([{ op: "lease.fence", session_id: "s1", owner: "A", token: 1 }, { op: "event.append", row: ev }]);
        await store.acquireLease(req("B", 20_000)); // A is dead by now
        const stale = store.commit([
          { op: "lease.fence", session_id: "s1", owner: "A", token: 1 },
          { op: "event.append", row: { ...ev, seq: 2 } },
        ]);
        await expect(stale).rejects.toBeInstanceOf(FenceError);
        expect(await store.latestEventSeq("s1")).toBe(1);
      });

      it("checks each fence of a batch: a stale token after a good one for the same session fails the whole batch", async () => {
        const store = await fresh();
        await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
        await store.beat(beat("A", 10_000), 11_000);
        await store.acquireLease(req("A", 10_000));
        const ev = { session_id: "s1", seq: 1, type: "x", payload: "{}", turn_id: null, trace_id: null, created_at: 1 };
        const batch = store.commit([
          { op: "lease.fence", session_id: "s1", owner: "A", token: 1 },
          { op: "event.append", row: ev },
          { op: "lease.fence", session_id: "s1", owner: "A", token: 1 },
          { op: "event.append", row: { ...ev, seq: 2 } },
          { op: "lease.fence", session_id: "s1", owner: "A", token: 0 },
          { op: "event.append", row: { ...ev, seq: 3 } },
        ]);
        await expect(batch).rejects.toBeInstanceOf(FenceError);
        expect(await store.latestEventSeq("s1")).toBe(0);
      });

      it("beats extend the owner's leases; release needs the current token", async () => {
        const store = await fresh();
        await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
        await store.beat(beat("A", 10_000), 11_000);
        await store.acquireLease(req("A", 10_000));
        await store.beat(beat("A", 15_000), 16_000);
        expect((await store.getHeartbeat("A"))!.last_beat).toBe(15_000);
        expect(await store.leasesOf("A")).toEqual([{ session_id: "s1", owner: "A", token: 1, expires_at: 16_000, detached: false }]);
        await store.releaseLease("s1", "A", 99);
        expect(await store.getLease("s1")).not.toBeNull();
        await store.releaseLease("s1", "A", 1);
        expect(await store.getLease("s1")).toBeNull();
        expect((await store.listHeartbeats()).map((h) => h.id)).toEqual(["A"]);
        await store.removeHeartbeat("A");
        expect(await store.getHeartbeat("A")).toBeNull();
      });

      it("finds open sessions no living process owns, and leaves a live owner's alone", async () => {
        const store = await fresh();
        await store.commit([
          { op: "session.insert", row: sessionRow("live") },
          { op: "session.insert", row: sessionRow("dead") },
          { op: "session.insert", row: sessionRow("nolease") },
          { op: "session.insert", row: sessionRow("ended", { ended_at: 5, end_reason: "user_close" }) },
        ]);
        await store.beat(beat("A", 10_000), 20_000);
        await store.beat(beat("D", 1_000), 20_000); // D stopped beating long ago, lease not yet expired
        await store.commit([
          { op: "lease.insert", row: { session_id: "live", owner: "A", token: 1, expires_at: 20_000, detached: false } },
          { op: "lease.insert", row: { session_id: "dead", owner: "D", token: 1, expires_at: 20_000, detached: false } },
        ]);
        const orphans = await store.findOrphanedSessions(10_000, 10_000 - 3000, 100);
        expect(orphans.sort()).toEqual(["dead", "nolease"]);
      });

      it("reads many sessions' lease states in one call: owner, detached, and whether the owner is alive", async () => {
        const store = await fresh();
        const ids = ["attached", "parked", "dead", "gone", "nolease"];
        await store.commit(ids.map((id) => ({ op: "session.insert" as const, row: sessionRow(id) })));
        await store.beat(beat("A", 10_000), 20_000);
        await store.beat(beat("D", 1_000), 20_000); // D stopped beating long ago
        const lease = (session_id: string, owner: string, detached = false) =>
          ({ op: "lease.insert" as const, row: { session_id, owner, token: 1, expires_at: 20_000, detached } });
        await store.commit([lease("attached", "A"), lease("parked", "A", true), lease("dead", "D"), lease("gone", "G")]);
        const states = await store.leaseStates([...ids, "unknown"], 10_000 - 3000);
        expect(states.sort((x, y) => x.session_id.localeCompare(y.session_id))).toEqual([
          { session_id: "attached", owner: "A", detached: false, expires_at: 20_000, owner_alive: true },
          { session_id: "dead", owner: "D", detached: false, expires_at: 20_000, owner_alive: false },
          // G never beat (or its heartbeat was removed): dead.
          { session_id: "gone", owner: "G", detached: false, expires_at: 20_000, owner_alive: false },
          { session_id: "parked", owner: "A", detached: true, expires_at: 20_000, owner_alive: true },
        ]);
        // The owner's flag is read as it changes; only the asked sessions come back.
        await store.setLeaseDetached("parked", "A", 1, false);
        expect(await store.leaseStates(["parked"], 7_000)).toEqual([
          { session_id: "parked", owner: "A", detached: false, expires_at: 20_000, owner_alive: true },
        ]);
        expect(await store.leaseStates([], 7_000)).toEqual([]);
        // A's heartbeat judged against a later deadline: dead too.
        expect((await store.leaseStates(["attached"], 10_001))[0]).toMatchObject({ owner_alive: false });
      });
    });

    describe("HTTP API tables", () => {
      const response = (id: string) => ({
        id,
        principal: "default",
        session_id: "s1",
        turn_id: "t1",
        after_seq: 3,
        model: "demo",
        status: "in_progress",
        background: true,
        stored: true,
        previous_response_id: null,
        instructions: "be brief",
        metadata: { k: "v" },
        echo: { tools: [{ type: "function", name: "f" }], tool_choice: "required", temperature: 0.3 },
        cancel_requested: false,
        result: null,
        created_at: 1000,
        completed_at: null,
      });

      it("round-trips a response row and applies patches", async () => {
        const store = await fresh();
        await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
        await store.commit([{ op: "response.insert", row: response("resp_1") }]);
        expect(await store.getResponse("resp_1")).toEqual(response("resp_1"));
        await store.commit([
          { op: "response.update", id: "resp_1", patch: { status: "cancelled", cancel_requested: true, result: "{}", completed_at: 2000 } },
        ]);
        expect(await store.getResponse("resp_1")).toMatchObject({
          status: "cancelled",
          cancel_requested: true,
          result: "{}",
          completed_at: 2000,
          background: true,
        });
        expect(await store.getResponse("resp_nope")).toBeNull();
      });

      it("deletes a response row (and only that one)", async () => {
        const store = await fresh();
        await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
        await store.commit([
          { op: "response.insert", row: response("resp_1") },
          { op: "response.insert", row: { ...response("resp_2"), echo: null } },
        ]);
        await store.commit([{ op: "response.delete", id: "resp_1" }]);
        expect(await store.getResponse("resp_1")).toBeNull();
        expect(await store.getResponse("resp_2")).toEqual({ ...response("resp_2"), echo: null });
        // Deleting what is not there is no error.
        await store.commit([{ op: "response.delete", id: "resp_1" }]);
      });

      it("claims an idempotency key once, records its answer, releases a failed one, takes over a dead owner's", async () => {
        const store = await fresh();
        const row = { principal: "p", key: "k1", fingerprint: "f1", owner: "e1", status: null, body: null, created_at: 1 };
        expect(await store.claimHttpIdempotency(row)).toEqual({ claimed: true, row });
        const again = await store.claimHttpIdempotency({ ...row, fingerprint: "f2", owner: "e2" });
        expect(again).toEqual({ claimed: false, row });
        // Another principal's key of the same name is a different key.
        expect((await store.claimHttpIdempotency({ ...row, principal: "q" })).claimed).toBe(true);
        // A claim still running under a dead owner is taken over (same fingerprint only).
        expect((await store.claimHttpIdempotency({ ...row, fingerprint: "f2", owner: "e2" }, () => true)).claimed).toBe(false);
        expect((await store.claimHttpIdempotency({ ...row, owner: "e2" }, (o) => o === "e1")).claimed).toBe(true);
        await store.commit([{ op: "http_idempotency.complete", principal: "p", key: "k1", status: 201, body: '{"ok":1}' }]);
        const done = await store.claimHttpIdempotency({ ...row, owner: "e3" }, () => true);
        expect(done).toEqual({ claimed: false, row: { ...row, owner: "e2", status: 201, body: '{"ok":1}' } });
        // Release only drops an unfinished claim of its owner.
        await store.commit([{ op: "http_idempotency.release", principal: "p", key: "k1", owner: "e2" }]);
        expect((await store.claimHttpIdempotency({ ...row, owner: "e4" })).claimed).toBe(false);
        await store.commit([{ op: "http_idempotency.release", principal: "q", key: "k1", owner: "e1" }]);
        expect((await store.claimHttpIdempotency({ ...row, principal: "q", owner: "e5" })).claimed).toBe(true);
      });
    });

    // Optional capability (Store.delegations): SQLite implements it; a store without it skips these.
    describe("delegations", () => {
      const delegation = (id: string, over: Partial<DelegationRow> = {}): DelegationRow => ({
        id,
        principal: "default",
        origin_session_id: "s1",
        kind: "delegate",
        tasks: [{ goal: "g", status: "running", child_session_id: null, result: null, error: null, duration_ms: null }],
        status: "running",
        owner: "p1",
        claimed_by: null,
        claim_expires_at: null,
        attempts: 0,
        delivered_session_id: null,
        delivered_message_id: null,
        created_at: 1000,
        completed_at: null,
        delivered_at: null,
        context: null,
        resumes: 0,
        ...over,
      });

      it("round-trips, updates and lists delegations by origin and status", async () => {
        const store = await fresh();
        const d = store.delegations;
        if (!d) return;
        await store.commit([
          { op: "delegation.insert", row: delegation("d1") },
          { op: "delegation.insert", row: delegation("d2", { origin_session_id: "s2", created_at: 1001, context: "user: hi\nassistant: é", resumes: 1 }) },
        ]);
        expect(await d.getDelegation("d1")).toEqual(delegation("d1"));
        expect(await d.getDelegation("d2")).toEqual(delegation("d2", { origin_session_id: "s2", created_at: 1001, context: "user: hi\nassistant: é", resumes: 1 }));
        expect(await d.getDelegation("nope")).toBeNull();
        const tasks = [{ goal: "g", status: "completed" as const, child_session_id: "c1", result: "ok", error: null, duration_ms: 5 }];
        await store.commit([{ op: "delegation.update", id: "d1", patch: { status: "completed", tasks, completed_at: 2000 } }]);
        expect(await d.getDelegation("d1")).toMatchObject({ status: "completed", tasks, completed_at: 2000 });
        expect((await d.listDelegations({ originSessionIds: ["s1", "s2"], limit: 10 })).map((r) => r.id)).toEqual(["d1", "d2"]);
        expect((await d.listDelegations({ statuses: ["running"], limit: 10 })).map((r) => r.id)).toEqual(["d2"]);
        expect(await d.listDelegations({ originSessionIds: [], limit: 10 })).toEqual([]);
      });

      it("claims a completed delegation once until the claim expires or is released, counting attempts", async () => {
        const store = await fresh();
        const d = store.delegations;
        if (!d) return;
        await store.commit([{ op: "delegation.insert", row: delegation("d1") }]);
        expect(await d.claimDelegation("d1", "p1", 1000, 100)).toBe(false); // still running
        await store.commit([{ op: "delegation.update", id: "d1", patch: { status: "completed" } }]);
        expect(await d.claimDelegation("d1", "p1", 1000, 100)).toBe(true);
        expect(await d.claimDelegation("d1", "p2", 1050, 100)).toBe(false);
        expect(await d.claimDelegation("d1", "p2", 1101, 100)).toBe(true); // expired
        await d.releaseDelegationClaim("d1", "p1"); // not p1's any more: no effect
        expect(await d.claimDelegation("d1", "p3", 1150, 100)).toBe(false);
        await d.releaseDelegationClaim("d1", "p2");
        expect(await d.claimDelegation("d1", "p3", 1150, 100)).toBe(true);
        expect((await d.getDelegation("d1"))!.attempts).toBe(3);
      });

      it("takes a running delegation over from its owner exactly once (compare-and-set), counting resumes", async () => {
        const store = await fresh();
        const d = store.delegations;
        if (!d) return;
        await store.commit([{ op: "delegation.insert", row: delegation("d1") }]);
        // Two processes race to take over the dead p1's row: exactly one wins.
        const raced = await Promise.all([d.takeOverDelegation("d1", "p1", "p2"), d.takeOverDelegation("d1", "p1", "p3")]);
        expect(raced.filter(Boolean)).toHaveLength(1);
        const winner = raced[0] ? "p2" : "p3";
        expect(await d.getDelegation("d1")).toMatchObject({ owner: winner, resumes: 1, status: "running" });
        expect(await d.takeOverDelegation("d1", "p1", "p4")).toBe(false); // p1 is no longer the owner
        expect(await d.takeOverDelegation("d1", winner, "p4")).toBe(true);
        expect(await d.getDelegation("d1")).toMatchObject({ owner: "p4", resumes: 2 });
        await store.commit([{ op: "delegation.update", id: "d1", patch: { status: "completed" } }]);
        expect(await d.takeOverDelegation("d1", "p4", "p5")).toBe(false); // not running any more
        expect(await d.takeOverDelegation("nope", "p1", "p2")).toBe(false);
        expect(await d.getDelegation("d1")).toMatchObject({ owner: "p4", resumes: 2 });
      });

      it("refuses an owner-fenced update once the owner lost the delegation, and its whole transaction", async () => {
        const store = await fresh();
        const d = store.delegations;
        if (!d) return;
        await store.commit([{ op: "session.insert", row: sessionRow("s1") }, { op: "delegation.insert", row: delegation("d1") }]);
        const tasks = [{ goal: "g", status: "completed" as const, child_session_id: "c1", result: "ok", error: null, duration_ms: 5 }];
        await store.commit([{ op: "delegation.update", id: "d1", owner: "p1", patch: { tasks } }]);
        expect((await d.getDelegation("d1"))!.tasks).toEqual(tasks);
        expect(await d.takeOverDelegation("d1", "p1", "p2")).toBe(true);
        const stale = store.commit([
          { op: "message.insert", row: messageRow("m1", "s1", 1) },
          { op: "delegation.update", id: "d1", owner: "p1", patch: { status: "completed", tasks: [], completed_at: 2000 } },
        ]);
        await expect(stale).rejects.toBeInstanceOf(DelegationLostError);
        expect(await store.loadMessages("s1")).toEqual([]);
        expect(await d.getDelegation("d1")).toMatchObject({ status: "running", owner: "p2", tasks, completed_at: null });
        await store.commit([{ op: "delegation.update", id: "d1", owner: "p2", patch: { status: "completed", completed_at: 2000 } }]);
        // Completed: even its owner's fenced writes are refused (an unfenced one still applies).
        await expect(store.commit([{ op: "delegation.update", id: "d1", owner: "p2", patch: { tasks: [] } }])).rejects.toBeInstanceOf(
          DelegationLostError,
        );
        expect(await d.getDelegation("d1")).toMatchObject({ status: "completed", tasks });
      });

      it("delivers exactly once: a second delivery fails its whole transaction", async () => {
        const store = await fresh();
        const d = store.delegations;
        if (!d) return;
        await store.commit([
          { op: "session.insert", row: sessionRow("s1") },
          { op: "delegation.insert", row: delegation("d1", { status: "completed" }) },
        ]);
        await store.commit([
          { op: "message.insert", row: messageRow("m1", "s1", 1) },
          { op: "delegation.deliver", id: "d1", session_id: "s1", message_id: "m1", at: 3000 },
        ]);
        expect(await d.getDelegation("d1")).toMatchObject({ status: "delivered", delivered_session_id: "s1", delivered_message_id: "m1", delivered_at: 3000 });
        await expect(
          store.commit([
            { op: "message.insert", row: messageRow("m2", "s1", 2) },
            { op: "delegation.deliver", id: "d1", session_id: "s1", message_id: "m2", at: 3001 },
          ]),
        ).rejects.toBeInstanceOf(AlreadyDeliveredError);
        expect((await store.loadMessages("s1")).map((m) => m.id)).toEqual(["m1"]);
        expect(await d.claimDelegation("d1", "p1", 4000, 100)).toBe(false);
      });
    });
  
    describe("requests and approvals", () => {
      const request = (id: string, over: Partial<RequestRow> = {}): RequestRow => ({
        id,
        session_id: "s1",
        turn_id: "t1",
        trace_id: "0".repeat(32),
        kind: "approval",
        call_id: `call_${id}`,
        tool: "files__write_file",
        ordinal: 0,
        payload: { request_id: id, kind: "approval", tool: "files__write_file", args: { path: "a" } },
        rerunnable: false,
        status: "open",
        choice: null,
        resolved_by: null,
        reason: null,
        note: null,
        answer: null,
        created_at: 2000,
        resolved_at: null,
        ...over,
      });

      it("round-trips a request, and the first answer wins: a guarded update of an answered request fails its transaction", async () => {
        const store = await fresh();
        await store.commit([{ op: "session.insert", row: sessionRow("s1") }, { op: "request.insert", row: request("r1", { rerunnable: true }) }]);
        expect(await store.requests.getRequest("r1")).toEqual(request("r1", { rerunnable: true }));
        const answer = (choice: string): WriteOp => ({ op: "request.update", id: "r1", patch: { status: "resolved", choice, resolved_by: "alice", resolved_at: 3000 }, from: ["open"] });
        await store.commit([answer("once")]);
        await expect(store.commit([{ op: "session.update", id: "s1", patch: { title: "lost" } }, answer("deny")])).rejects.toBeInstanceOf(RequestStateError);
        expect(await store.requests.getRequest("r1")).toMatchObject({ status: "resolved", choice: "once", resolved_by: "alice", resolved_at: 3000 });
        expect((await store.getSession("s1"))!.title).toBe("title s1");
        await store.commit([{ op: "request.update", id: "r1", patch: { status: "done", answer: { content: { a: 1 } } } }]);
        expect(await store.requests.getRequest("r1")).toMatchObject({ status: "done", answer: { content: { a: 1 } } });
        expect(await store.requests.getRequest("nope")).toBeNull();
      });

      it("lists a session's unfinished requests in order, and the tools answered `session` in a lineage", async () => {
        const store = await fresh();
        await store.commit([
          { op: "session.insert", row: sessionRow("s1") },
          { op: "session.insert", row: sessionRow("s2") },
          { op: "request.insert", row: request("r2", { ordinal: 1 }) },
          { op: "request.insert", row: request("r1", { ordinal: 0 }) },
          { op: "request.insert", row: request("r3", { status: "done", choice: "session", tool: "a__b" }) },
          { op: "request.insert", row: request("r4", { session_id: "s2", status: "done", choice: "session", tool: "c__d" }) },
          { op: "request.insert", row: request("r5", { session_id: "s2", status: "done", choice: "once", tool: "e__f" }) },
        ]);
        expect((await store.requests.unfinishedRequests("s1")).map((r) => r.id)).toEqual(["r1", "r2"]);
        expect((await store.requests.sessionApprovals(["s1"])).sort()).toEqual(["a__b"]);
        expect((await store.requests.sessionApprovals(["s1", "s2"])).sort()).toEqual(["a__b", "c__d"]);
        expect(await store.requests.sessionApprovals([])).toEqual([]);
      });

      it("finds the open requests whose deadline passed, of any session, soonest first (the recovery sweep's read)", async () => {
        const store = await fresh();
        const due = (id: string, at: number, over: Partial<RequestRow> = {}) => request(id, { payload: { request_id: id, kind: "approval", expires_at: at }, ...over });
        await store.commit([
          { op: "session.insert", row: sessionRow("s1") },
          { op: "session.insert", row: sessionRow("s2") },
          { op: "request.insert", row: due("r1", 5000) },
          { op: "request.insert", row: due("r2", 3000, { session_id: "s2" }) },
          { op: "request.insert", row: due("r3", 9000) },
          { op: "request.insert", row: request("r4") },
          { op: "request.insert", row: due("r5", 1000, { status: "resolved", choice: "once" }) },
        ]);
        expect(await store.requests.dueRequests(5000, 10)).toEqual([
          { session_id: "s2", request_id: "r2", expires_at: 3000 },
          { session_id: "s1", request_id: "r1", expires_at: 5000 },
        ]);
        expect((await store.requests.dueRequests(10_000, 1)).map((r) => r.request_id)).toEqual(["r2"]);
        // Answered: no longer due.
        await store.commit([{ op: "request.update", id: "r2", patch: { status: "resolved", choice: "deny" }, from: ["open"] }]);
        expect((await store.requests.dueRequests(10_000, 10)).map((r) => r.request_id)).toEqual(["r1", "r3"]);
      });

      it("stores, lists (per principal) and revokes `always` approvals", async () => {
        const store = await fresh();
        await store.commit([
          { op: "approval.put", row: { principal: "alice", tool: "b__x", by: "alice", created_at: 1 } },
          { op: "approval.put", row: { principal: "alice", tool: "a__x", by: "alice", created_at: 2 } },
          { op: "approval.put", row: { principal: "bob", tool: "a__x", by: "bob", created_at: 3 } },
          { op: "approval.put", row: { principal: "alice", tool: "a__x", by: "alice", created_at: 4 } },
        ]);
        expect(await store.requests.listApprovals("alice")).toEqual([
          { principal: "alice", tool: "a__x", by: "alice", created_at: 4 },
          { principal: "alice", tool: "b__x", by: "alice", created_at: 1 },
        ]);
        await store.commit([{ op: "approval.delete", principal: "alice", tool: "a__x" }]);
        expect((await store.requests.listApprovals("alice")).map((a) => a.tool)).toEqual(["b__x"]);
        expect((await store.requests.listApprovals("bob")).map((a) => a.tool)).toEqual(["a__x"]);
      });
    });

    describe("background processes", () => {
      const proc = (id: string, over: Partial<ProcessRow> = {}): ProcessRow => ({
        id,
        session_id: "s1",
        command: "npm run dev",
        cwd: "/srv/app",
        pid: 4242,
        status: "running",
        exit_code: null,
        signal: null,
        started_at: 3000,
        ended_at: null,
        output_tail: "",
        owner: "proc-a",
        ...over,
      });

      it("round-trips process records, applies their end, lists a session's oldest first", async () => {
        const store = await fresh();
        await store.commit([
          { op: "session.insert", row: sessionRow("s1") },
          { op: "process.insert", row: proc("p2", { started_at: 3001 }) },
          { op: "process.insert", row: proc("p1") },
          { op: "process.insert", row: proc("p3", { session_id: "s2" }) },
        ]);
        expect(await store.processes.listProcesses("s1")).toEqual([proc("p1"), proc("p2", { started_at: 3001 })]);
        await store.commit([{ op: "process.update", id: "p1", patch: { status: "exited", exit_code: 3, ended_at: 4000, output_tail: "bye\n" } }]);
        expect((await store.processes.listProcesses("s1"))[0]).toEqual(proc("p1", { status: "exited", exit_code: 3, ended_at: 4000, output_tail: "bye\n" }));
        await store.commit([{ op: "process.update", id: "p2", patch: { status: "killed", signal: "SIGTERM", ended_at: 4001 } }]);
        expect((await store.processes.listProcesses("s1"))[1]).toMatchObject({ status: "killed", signal: "SIGTERM", exit_code: null });
        expect(await store.processes.listProcesses("nobody")).toEqual([]);
      });
    });

    describe("agent envelopes", () => {
      const envelope = (id: string, over: Partial<EnvelopeRow> = {}): EnvelopeRow => ({
        id,
        principal: "default",
        from_session_id: "s1",
        from_profile: "alpha",
        from_name: "alpha",
        to: "beta",
        to_name: "beta",
        peer: null,
        text: "hello é",
        status: "pending",
        attempts: 0,
        next_attempt_at: 1000,
        claimed_by: null,
        claim_expires_at: null,
        last_error: null,
        recipient_session_id: null,
        recipient_turn_id: null,
        reply: null,
        reply_status: null,
        reanswers: 0,
        created_at: 1000,
        sent_at: null,
        replied_at: null,
        delivered_at: null,
        delivered_session_id: null,
        delivered_message_id: null,
        ...over,
      });

      it("round-trips, updates and lists envelopes by sender, status and due time", async () => {
        const store = await fresh();
        const e = store.envelopes;
        if (!e) return;
        await store.commit([
          { op: "envelope.insert", row: envelope("e1") },
          { op: "envelope.insert", row: envelope("e2", { from_session_id: "s2", created_at: 1001, next_attempt_at: 5000, peer: "west", to: "beta@west" }) },
        ]);
        expect(await e.getEnvelope("e1")).toEqual(envelope("e1"));
        expect(await e.getEnvelope("e2")).toEqual(envelope("e2", { from_session_id: "s2", created_at: 1001, next_attempt_at: 5000, peer: "west", to: "beta@west" }));
        expect(await e.getEnvelope("nope")).toBeNull();
        await store.commit([{ op: "envelope.update", id: "e1", patch: { status: "replied", reply: "hi", replied_at: 1500, recipient_session_id: "r1" } }]);
        expect(await e.getEnvelope("e1")).toMatchObject({ status: "replied", reply: "hi", replied_at: 1500, recipient_session_id: "r1" });
        expect((await e.listEnvelopes({ fromSessionIds: ["s1", "s2"], limit: 10 })).map((r) => r.id)).toEqual(["e1", "e2"]);
        expect((await e.listEnvelopes({ statuses: ["pending"], limit: 10 })).map((r) => r.id)).toEqual(["e2"]);
        expect((await e.listEnvelopes({ statuses: ["pending", "replied"], dueBy: 2000, limit: 10 })).map((r) => r.id)).toEqual(["e1"]);
        expect(await e.listEnvelopes({ fromSessionIds: [], limit: 10 })).toEqual([]);
      });

      it("claims once until expiry or release; a release counts the attempt; a fenced update needs the claim", async () => {
        const store = await fresh();
        const e = store.envelopes;
        if (!e) return;
        await store.commit([{ op: "session.insert", row: sessionRow("s1") }, { op: "envelope.insert", row: envelope("e1") }]);
        expect(await e.claimEnvelope("e1", "p1", 1000, 100)).toBe(true);
        expect(await e.claimEnvelope("e1", "p2", 1050, 100)).toBe(false);
        await store.commit([{ op: "envelope.update", id: "e1", owner: "p1", patch: { status: "sent", sent_at: 1060 } }]);
        expect(await e.claimEnvelope("e1", "p2", 1101, 100)).toBe(true); // expired
        const stale = store.commit([
          { op: "message.insert", row: messageRow("m1", "s1", 1) },
          { op: "envelope.update", id: "e1", owner: "p1", patch: { status: "replied" } },
        ]);
        await expect(stale).rejects.toBeInstanceOf(EnvelopeClaimLostError);
        expect(await store.loadMessages("s1")).toEqual([]);
        await e.releaseEnvelope("e1", "p1", 9999, "ignored"); // not p1's: no effect
        expect(await e.getEnvelope("e1")).toMatchObject({ claimed_by: "p2", attempts: 0, status: "sent" });
        await e.releaseEnvelope("e1", "p2", 3000, "peer down");
        expect(await e.getEnvelope("e1")).toMatchObject({ claimed_by: null, attempts: 1, next_attempt_at: 3000, last_error: "peer down" });
      });

      it("delivers an envelope once: a second envelope.deliver refuses its whole transaction", async () => {
        const store = await fresh();
        const e = store.envelopes;
        if (!e) return;
        await store.commit([{ op: "session.insert", row: sessionRow("s1") }, { op: "envelope.insert", row: envelope("e1", { status: "replied" }) }]);
        await store.commit([{ op: "message.insert", row: messageRow("m1", "s1", 1) }, { op: "envelope.deliver", id: "e1", session_id: "s1", message_id: "m1", at: 2000 }]);
        expect(await e.getEnvelope("e1")).toMatchObject({ status: "delivered", delivered_session_id: "s1", delivered_message_id: "m1", delivered_at: 2000 });
        const twice = store.commit([{ op: "message.insert", row: messageRow("m2", "s1", 2) }, { op: "envelope.deliver", id: "e1", session_id: "s1", message_id: "m2", at: 2100 }]);
        await expect(twice).rejects.toBeInstanceOf(AlreadyDeliveredError);
        expect((await store.loadMessages("s1")).map((m) => m.id)).toEqual(["m1"]);
        expect(await e.claimEnvelope("e1", "p1", 3000, 100)).toBe(false); // delivered: nothing to claim
      });

      it("a terminal delivery error ends the envelope failed, once; the reply's status round-trips", async () => {
        const store = await fresh();
        const e = store.envelopes;
        if (!e) return;
        await store.commit([{ op: "session.insert", row: sessionRow("s1") }, { op: "envelope.insert", row: envelope("e1") }]);
        await store.commit([{ op: "envelope.update", id: "e1", patch: { status: "replied", reply: "no such bot", reply_status: "failed", reanswers: 2 } }]);
        expect(await e.getEnvelope("e1")).toMatchObject({ reply_status: "failed", reanswers: 2 });
        await store.commit([{ op: "message.insert", row: messageRow("m1", "s1", 1) }, { op: "envelope.deliver", id: "e1", session_id: "s1", message_id: "m1", at: 2000, status: "failed" }]);
        expect(await e.getEnvelope("e1")).toMatchObject({ status: "failed", delivered_message_id: "m1" });
        const twice = store.commit([{ op: "message.insert", row: messageRow("m2", "s1", 2) }, { op: "envelope.deliver", id: "e1", session_id: "s1", message_id: "m2", at: 2100 }]);
        await expect(twice).rejects.toBeInstanceOf(AlreadyDeliveredError);
        expect(await e.claimEnvelope("e1", "p1", 3000, 100)).toBe(false); // failed is final
      });
    });

    describe("A2A tasks", () => {
      const task = (id: string, over: Partial<A2ATaskRow> = {}): A2ATaskRow => ({
        id,
        principal: "alice",
        bot: "beta",
        context_id: "ctx-1",
        state: "working",
        body: JSON.stringify({ id, text: "é" }),
        owner: "p1",
        claim_expires_at: 2000,
        created_at: 1000,
        updated_at: 1000,
        ...over,
      });

      it("a task is its principal's and its bot's: another principal, another bot and an unknown id all read nothing", async () => {
        const store = await fresh();
        const t = store.a2aTasks;
        if (!t) return;
        await store.commit([{ op: "a2a_task.put", row: task("t1") }]);
        expect(await t.getA2ATask("alice", "beta", "t1")).toEqual(task("t1"));
        expect(await t.getA2ATask("bob", "beta", "t1")).toBeNull();
        expect(await t.getA2ATask("alice", "gamma", "t1")).toBeNull();
        expect(await t.getA2ATask("alice", "beta", "nope")).toBeNull();
        // Another principal's put of the same id changes nothing.
        await store.commit([{ op: "a2a_task.put", row: task("t1", { principal: "bob", state: "completed", body: "{}", updated_at: 5000 }) }]);
        expect(await t.getA2ATask("alice", "beta", "t1")).toEqual(task("t1"));
        expect(await t.getA2ATask("bob", "beta", "t1")).toBeNull();
      });

      it("a finished task is never reopened; an unfinished one is written by its claim's holder, or once the claim lapsed", async () => {
        const store = await fresh();
        const t = store.a2aTasks;
        if (!t) return;
        await store.commit([{ op: "a2a_task.put", row: task("t1") }]);
        // p2 while p1's claim holds: refused; after it lapsed: taken.
        await store.commit([{ op: "a2a_task.put", row: task("t1", { owner: "p2", body: "{\"by\":2}", updated_at: 1500 }) }]);
        expect((await t.getA2ATask("alice", "beta", "t1"))!.owner).toBe("p1");
        await store.commit([{ op: "a2a_task.put", row: task("t1", { owner: "p2", body: "{\"by\":2}", claim_expires_at: 6000, updated_at: 2500 }) }]);
        expect(await t.getA2ATask("alice", "beta", "t1")).toMatchObject({ owner: "p2", body: "{\"by\":2}" });
        // A finished state from anyone ends it (a cancel); nothing changes it after.
        await store.commit([{ op: "a2a_task.put", row: task("t1", { owner: null, claim_expires_at: null, state: "canceled", updated_at: 2600 }) }]);
        await store.commit([{ op: "a2a_task.put", row: task("t1", { owner: "p2", state: "completed", body: "{}", updated_at: 2700 }) }]);
        expect(await t.getA2ATask("alice", "beta", "t1")).toMatchObject({ state: "canceled", updated_at: 2600 });
        expect(await t.claimA2ATask("t1", "p3", 9000, 100)).toBe(false);
      });

      it("lists unfinished tasks whose claim lapsed, and claims them once; retention deletes old finished ones only", async () => {
        const store = await fresh();
        const t = store.a2aTasks;
        if (!t || !store.retention) return;
        await store.commit([
          { op: "a2a_task.put", row: task("t1", { claim_expires_at: 2000 }) },
          { op: "a2a_task.put", row: task("t2", { claim_expires_at: 9000 }) },
          { op: "a2a_task.put", row: task("t3", { state: "completed", owner: null, claim_expires_at: null, updated_at: 1000 }) },
          { op: "a2a_task.put", row: task("t4", { state: "failed", owner: null, claim_expires_at: null, updated_at: 8000 }) },
        ]);
        expect((await t.listLapsedA2ATasks(3000, 10)).map((r) => r.id)).toEqual(["t1"]);
        expect(await t.claimA2ATask("t1", "p2", 3000, 100)).toBe(true);
        expect(await t.claimA2ATask("t1", "p3", 3050, 100)).toBe(false);
        expect(await t.claimA2ATask("t1", "p2", 3050, 100)).toBe(true); // renewed by its holder
        expect(await t.claimA2ATask("t2", "p2", 3000, 100)).toBe(false);
        expect(await store.retention.purgeA2ATasks(5000, 10)).toBe(1);
        expect(await t.getA2ATask("alice", "beta", "t3")).toBeNull();
        expect(await t.getA2ATask("alice", "beta", "t4")).not.toBeNull();
        expect(await t.getA2ATask("alice", "beta", "t1")).not.toBeNull(); // unfinished: never purged
      });
    });

});
}
