/**
 * The SQLite delta log's read is indexed (migration 13): the query plan seeks the index bucket by
 * bucket and never scans the log, and a message whose rows span several buckets — and a reopen of
 * the file, which starts a new bucket — reads back whole and in seq order.
 */
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { BUCKET_ROWS, DELTA_LOG_READ } from "../../src/store/sqlite/appends.js";
import type { WriteOp } from "../../src/store/types.js";
import { messageRow, sessionRow } from "../support/store-contract.js";
import { tempDbPath } from "../support/temp-db.js";

const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

function open(path: string): SqliteStore {
  const store = new SqliteStore({ path });
  stores.push(store);
  return store;
}

const streaming = (id: string, sid: string, seq: number): WriteOp => ({
  op: "message.insert",
  row: messageRow(id, sid, seq, { role: "assistant", status: "streaming", content: "" }),
});
const delta = (sid: string, mid: string, seq: number): WriteOp => ({ op: "delta.append", session_id: sid, message_id: mid, seq, text: ` ${seq}` });

describe("SQLite delta-log index", () => {
  it("reads a streaming message's log by index seeks, never a scan of the log", async () => {
    const path = tempDbPath();
    const store = open(path);
    await store.commit([{ op: "session.insert", row: sessionRow("s1") }, streaming("m1", "s1", 1), delta("s1", "m1", 2)]);
    const db = new Database(path, { readonly: true });
    try {
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${DELTA_LOG_READ}`).all("s1", "s1", 99) as Array<{ detail: string }>).map((r) => r.detail);
      // Every access to the log and to messages is a SEARCH on an index; a SCAN of either is the bug.
      expect(plan.some((d) => /SEARCH d USING INDEX message_deltas_by_bucket \(bucket=\? AND message_id=\?/.test(d))).toBe(true);
      expect(plan.some((d) => /SEARCH m USING INDEX messages_streaming/.test(d))).toBe(true);
      expect(plan.filter((d) => /^SCAN (d|m|message_deltas|messages)\b/.test(d))).toEqual([]);
    } finally {
      db.close();
    }
  });

  it("joins a message's rows across buckets and across a reopen, in seq order, beside other sessions' rows", async () => {
    const path = tempDbPath();
    let store = open(path);
    await store.commit([
      { op: "session.insert", row: sessionRow("s1") },
      { op: "session.insert", row: sessionRow("s2") },
      streaming("a", "s1", 1),
      streaming("b", "s2", 1),
    ]);
    // Each commit: one row of each stream, as a group commit of two live streams writes them.
    const rowsEach = BUCKET_ROWS + 300;
    for (let seq = 2; seq < 2 + rowsEach; seq += 100) {
      const ops: WriteOp[] = [];
      for (let k = seq; k < seq + 100 && k < 2 + rowsEach; k++) ops.push(delta("s1", "a", k), delta("s2", "b", k));
      await store.commit(ops);
    }
    await store.close();
    store = open(path);
    await store.commit([delta("s1", "a", 2 + rowsEach)]);
    const expected = (n: number) => Array.from({ length: n }, (_, i) => ` ${i + 2}`).join("");
    expect((await store.streamedText("s1")).get("a")).toBe(expected(rowsEach + 1));
    expect((await store.streamedText("s2")).get("b")).toBe(expected(rowsEach));
    expect((await store.loadMessages("s1"))[0]!.content).toBe(expected(rowsEach + 1));
    // Up to a seq: the rows after it are left out.
    expect((await store.streamedText("s1", 11)).get("a")).toBe(expected(10));
    const db = new Database(path, { readonly: true });
    try {
      const buckets = db.prepare(`SELECT COUNT(DISTINCT bucket) AS n FROM message_deltas`).get() as { n: number };
      expect(buckets.n).toBeGreaterThanOrEqual(3); // rows over two buckets, then the reopen's own
    } finally {
      db.close();
    }
  });
});
