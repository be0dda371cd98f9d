/**
 * PostgreSQL group commits on a real server: a streaming batch of many units is one statement, any
 * other batch one INSERT per append-only table in its transaction (the statements the store sends
 * are counted at the `pg` client); rows keep seq order, the fences are checked without a query
 * each, and a failing row or a stale fence anywhere in the batch writes nothing of it.
 */
import pg from "pg";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { FenceError, type EventRow, type WriteOp } from "../../src/store/types.js";
import { dropTestSchemas, PG_URL, pgAvailable, pgTestUrl } from "../support/pg.js";
import { messageRow, sessionRow } from "../support/store-contract.js";

afterAll(dropTestSchemas);

/** Every statement text the `pg` clients of this process send while `on`. */
const sent: string[] = [];
let counting = false;
const realQuery = pg.Client.prototype.query;
beforeEach(() => {
  (pg.Client.prototype as { query: unknown }).query = function (this: pg.Client, ...args: unknown[]) {
    const q = args[0];
    if (counting) sent.push(typeof q === "string" ? q : (q as { text: string }).text);
    return (realQuery as (...a: unknown[]) => unknown).apply(this, args);
  };
});
afterEach(() => {
  pg.Client.prototype.query = realQuery;
  counting = false;
  sent.length = 0;
});

const ev = (sid: string, seq: number, type = "t"): EventRow => ({
  session_id: sid, seq, type, payload: `{"n":${seq},"s":"é \\"q\\" {a,b} NULL"}`, turn_id: seq % 2 ? "turn_1" : null, trace_id: null, created_at: 1000 + seq,
});
const fence = (sid: string, owner = "A", token = 1): WriteOp => ({ op: "lease.fence", session_id: sid, owner, token });
const lease = (sid: string, owner = "A"): WriteOp => ({ op: "lease.insert", row: { session_id: sid, owner, token: 1, expires_at: 1e15, detached: false } });
const streaming = (id: string, sid: string): WriteOp => ({
  op: "message.insert", row: messageRow(id, sid, 1, { role: "assistant", status: "streaming", content: "" }),
});

async function fixture(sessions: number) {
  const store = await PostgresStore.open({ url: pgTestUrl() });
  const ids = Array.from({ length: sessions }, (_, i) => `s${i}`);
  await store.commit(ids.flatMap((id) => [{ op: "session.insert" as const, row: sessionRow(id) }, lease(id), streaming(`m_${id}`, id)]));
  return { store, ids };
}

/** What a streaming group commit carries: per session, units of [fence, delta] and [fence, event]. */
function streamingBatch(ids: string[], rounds: number, firstSeq = 2): WriteOp[] {
  const ops: WriteOp[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const id of ids) {
      const seq = firstSeq + r * 2;
      ops.push(fence(id), { op: "delta.append", session_id: id, message_id: `m_${id}`, seq, text: ` ${seq}` });
      ops.push(fence(id), { op: "event.append", row: ev(id, seq + 1) });
    }
  }
  return ops;
}

describe.skipIf(!pgAvailable)("PostgreSQL commits, batched", () => {
  it("writes a streaming batch of 400 units (appends, fences, seq reservations) as one statement", async () => {
    const { store, ids } = await fixture(100);
    try {
      const batch = streamingBatch(ids, 2);
      batch.push(fence("s3"), { op: "seq.reserve", session_id: "s3", upTo: 2048 }, fence("s3"), { op: "seq.reserve", session_id: "s3", upTo: 1024 });
      counting = true;
      await store.commit(batch);
      counting = false;
      expect(sent.map((t) => t.trim().split(/\s+/).slice(0, 3).join(" "))).toEqual(["WITH fence AS"]);
      // Seq order kept, every row there, payload text byte for byte; the larger reservation won.
      for (const id of ["s0", "s57", "s99"]) {
        expect(await store.readEvents(id, 0, 10)).toEqual([ev(id, 3), ev(id, 5)]);
        expect((await store.streamedText(id)).get(`m_${id}`)).toBe(" 2 4");
      }
      expect((await store.getSession("s3"))!.seq_reserved).toBe(2048);
    } finally {
      await store.close();
    }
  });

  it("writes any other batch in one transaction with one INSERT per table, the fences with the lease lock it takes anyway", async () => {
    const { store, ids } = await fixture(100);
    try {
      const batch = streamingBatch(ids, 2);
      batch.push(fence("s5"), { op: "session.update", id: "s5", patch: { title: "renamed" } });
      counting = true;
      await store.commit(batch);
      counting = false;
      const verbs = sent.map((t) => t.trim().split(/\s+/).slice(0, 3).join(" "));
      expect(verbs).toEqual(["BEGIN", "SELECT session_id, owner,", "UPDATE sessions t", "INSERT INTO message_deltas", "INSERT INTO events", "COMMIT"]);
      for (const id of ["s0", "s57", "s99"]) {
        expect(await store.readEvents(id, 0, 10)).toEqual([ev(id, 3), ev(id, 5)]);
        expect((await store.streamedText(id)).get(`m_${id}`)).toBe(" 2 4");
      }
      expect((await store.getSession("s5"))!.title).toBe("renamed");
    } finally {
      await store.close();
    }
  });

  it("writes the turn starts and ends of 100 sessions as one statement per kind of write, whatever the number of sessions", async () => {
    const { store, ids } = await fixture(100);
    try {
      // Per session, what a turn's end and the next one's start carry (units as the group commit gathers them).
      const batch: WriteOp[] = [];
      for (const id of ids) {
        batch.push(fence(id), { op: "message.update", id: `m_${id}`, patch: { status: "complete", content: `answer ${id}` } });
        batch.push({ op: "delta.compact", session_id: id, message_id: `m_${id}` }, { op: "event.append", row: ev(id, 2, "message.complete") });
        batch.push({ op: "session.update", id, patch: { active_turn: null, last_activity_at: 5000 } });
        batch.push(fence(id), { op: "seq.reserve", session_id: id, upTo: 512 });
        batch.push({ op: "message.insert", row: messageRow(`u_${id}`, id, 3, { role: "user", content: `q ${id}` }) });
        batch.push({ op: "message.update", id: `u_${id}`, patch: { status: "complete" } }); // joins its insert
        batch.push({ op: "session.update", id, patch: { title: `t ${id}`, last_activity_at: 6000 } }); // the later time wins
        batch.push({ op: "seq.reserve", session_id: id, upTo: 256 }); // the larger reservation stays
      }
      counting = true;
      await store.commit(batch);
      counting = false;
      const verbs = sent.map((t) => t.trim().split(/\s+/).slice(0, 3).join(" "));
      expect(verbs).toEqual([
        "BEGIN", "SELECT session_id, owner,", "INSERT INTO messages", "UPDATE messages t", "UPDATE sessions t", "UPDATE sessions s",
        "DELETE FROM message_deltas", "INSERT INTO events", "COMMIT",
      ]);
      for (const id of ["s0", "s57", "s99"]) {
        const s = (await store.getSession(id))!;
        expect([s.title, s.last_activity_at, s.active_turn, s.seq_reserved]).toEqual([`t ${id}`, 6000, null, 512]);
        expect((await store.loadMessages(id)).map((m) => [m.id, m.status, m.content])).toEqual([[`m_${id}`, "complete", `answer ${id}`], [`u_${id}`, "complete", `q ${id}`]]);
        expect(await store.readEvents(id, 0, 10)).toEqual([ev(id, 2, "message.complete")]);
      }
    } finally {
      await store.close();
    }
  });

  it("keeps the batch's order where it matters: an op applied in place sees the gathered writes before it, and none after", async () => {
    const { store } = await fixture(2);
    try {
      await store.commit([
        { op: "message.update", id: "m_new", patch: { content: "before its insert: no row" } },
        { op: "message.insert", row: messageRow("m_new", "s0", 5, { role: "user", content: "inserted" }) },
        { op: "session.update", id: "s1", patch: { title: "first" } },
        { op: "messages.hide", session_id: "s0", from_seq: 5, hidden_by: "m_edit" }, // in place: hides m_new
        { op: "session.update", id: "s1", patch: { title: "second" } },
        { op: "message.insert", row: messageRow("m_after", "s0", 6, { role: "user", content: "after" }) },
      ]);
      expect((await store.loadHidden("s0", "m_edit")).map((m) => [m.id, m.content])).toEqual([["m_new", "inserted"]]);
      expect((await store.loadMessages("s0")).map((m) => m.id)).toEqual(["m_s0", "m_after"]);
      expect((await store.getSession("s1"))!.title).toBe("second");
      // Every column of a message at once, again and again (its statement's name must fit PostgreSQL's 63 bytes).
      for (let i = 0; i < 3; i++) {
        await store.commit([{ op: "message.update", id: "m_s0", patch: { content: `c${i}`, status: "complete", tool_calls: null, display_metadata: { i } } as never }]);
      }
      expect((await store.loadMessages("s0"))[0]).toMatchObject({ content: "c2", display_metadata: { i: 2 } });
      // A duplicate insert still fails the whole batch (and its other rows with it).
      await expect(store.commit([
        { op: "session.update", id: "s1", patch: { title: "third" } },
        { op: "message.insert", row: messageRow("m_dup", "s0", 7, { role: "user" }) },
        { op: "message.insert", row: messageRow("m_dup", "s0", 8, { role: "user" }) },
      ])).rejects.toMatchObject({ code: "23505" });
      expect((await store.getSession("s1"))!.title).toBe("second");
    } finally {
      await store.close();
    }
  });

  it("a failing row anywhere in the batch rolls the whole batch back", async () => {
    const { store, ids } = await fixture(20);
    try {
      await store.commit([{ op: "event.append", row: ev("s7", 99) }]);
      const batch = streamingBatch(ids, 1);
      batch.push(fence("s7"), { op: "event.append", row: ev("s7", 99) }); // duplicate (session, seq): the INSERT fails
      await expect(store.commit(batch)).rejects.toMatchObject({ code: "23505" });
      expect(await store.readEvents("s0", 0, 10)).toEqual([]);
      // The same in a batch that takes the transaction path.
      batch.push({ op: "session.update", id: "s1", patch: { title: "renamed" } });
      await expect(store.commit(batch)).rejects.toMatchObject({ code: "23505" });
      expect(await store.readEvents("s0", 0, 10)).toEqual([]);
      expect((await store.getSession("s1"))!.title).toBe("title s1");
      expect(await store.readEvents("s7", 0, 10)).toEqual([ev("s7", 99)]);
      expect(await store.streamedText("s0")).toEqual(new Map());
    } finally {
      await store.close();
    }
  });

  it("a stale fence anywhere in the batch fails it with FenceError; a lease inserted earlier in the batch fences later ops", async () => {
    const { store, ids } = await fixture(10);
    try {
      const stale = streamingBatch(ids, 1);
      stale.splice(6, 0, fence("s4", "A", 2), { op: "event.append", row: ev("s4", 50) });
      await expect(store.commit(stale)).rejects.toMatchObject({ name: "FenceError", sessionId: "s4", token: 2 });
      await expect(store.commit(stale)).rejects.toBeInstanceOf(FenceError);
      expect(await store.readEvents("s0", 0, 10)).toEqual([]);
      stale.push({ op: "session.update", id: "s1", patch: { title: "renamed" } }); // the transaction path
      await expect(store.commit(stale)).rejects.toMatchObject({ name: "FenceError", sessionId: "s4", token: 2 });
      expect(await store.readEvents("s0", 0, 10)).toEqual([]);
      // A session created and written in one batch (as a group commit can gather them).
      await store.commit([{ op: "session.insert", row: sessionRow("new") }, lease("new", "B"), fence("new", "B"), { op: "event.append", row: ev("new", 1) }]);
      expect(await store.readEvents("new", 0, 10)).toEqual([ev("new", 1)]);
      await expect(store.commit([fence("new", "A"), { op: "event.append", row: ev("new", 2) }])).rejects.toBeInstanceOf(FenceError);
      await expect(store.commit([fence("unknown"), { op: "event.append", row: ev("s1", 70) }])).rejects.toBeInstanceOf(FenceError);
    } finally {
      await store.close();
    }
  });

  it("delta.compact drops the message's rows gathered earlier in the batch, and those stored before", async () => {
    const { store } = await fixture(2);
    try {
      await store.commit([{ op: "delta.append", session_id: "s0", message_id: "m_s0", seq: 2, text: "stored" }]);
      await store.commit([
        { op: "delta.append", session_id: "s0", message_id: "m_s0", seq: 3, text: " gathered" },
        { op: "delta.append", session_id: "s1", message_id: "m_s1", seq: 3, text: "other" },
        { op: "message.update", id: "m_s0", patch: { status: "complete", content: "stored gathered" } },
        { op: "delta.compact", session_id: "s0", message_id: "m_s0" },
      ]);
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      try {
        const rows = await client.query(`SELECT message_id, text FROM ${store.schema}.message_deltas ORDER BY message_id`);
        expect(rows.rows).toEqual([{ message_id: "m_s1", text: "other" }]);
      } finally {
        await client.end();
      }
      expect((await store.loadMessages("s0"))[0]).toMatchObject({ status: "complete", content: "stored gathered" });
    } finally {
      await store.close();
    }
  });
});
