/**
 * A new session's row and its seq reservation / first-turn patch in one commit are written as one
 * INSERT: the stored row is the one the ops in order leave, on a real SQLite file.
 */
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { foldSessionInsert } from "../../src/store/fold-session-insert.js";
import type { WriteOp } from "../../src/store/write-ops.js";
import { sessionRow } from "../support/store-contract.js";
import { tempDbPath } from "../support/temp-db.js";

const ev = (seq: number) => ({ op: "event.append", row: { session_id: "s1", seq, type: "x", payload: "{}", turn_id: null, trace_id: null, created_at: 1 } }) as const;
const turnPatch = { op: "session.update", id: "s1", patch: { active_turn: { turn_id: "t1", trace_id: "tr1" }, last_activity_at: 77 } } as const;
const firstCommit: WriteOp[] = [{ op: "session.insert", row: sessionRow("s1") }, { op: "seq.reserve", session_id: "s1", upTo: 40 }, ev(1), turnPatch, ev(2)];

describe("foldSessionInsert", () => {
  it("folds the new row's seq reservation and first-turn patch into its INSERT", () => {
    const out = foldSessionInsert(firstCommit);
    expect(out.map((o) => o.op)).toEqual(["session.insert", "event.append", "event.append"]);
    const row = (out[0] as Extract<WriteOp, { op: "session.insert" }>).row;
    expect(row).toMatchObject({ seq_reserved: 40, last_activity_at: 77, active_turn: { turn_id: "t1", trace_id: "tr1" } });
  });

  it("stops at an op that is not known to leave the row alone, and at a patch of other columns", () => {
    const stop: WriteOp[] = [{ op: "session.insert", row: sessionRow("s1") }, { op: "messages.hide", session_id: "s1", hidden_by: "m", from_seq: 0 }, turnPatch];
    expect(foldSessionInsert(stop)).toBe(stop);
    const title: WriteOp[] = [{ op: "session.insert", row: sessionRow("s1") }, { op: "session.update", id: "s1", patch: { title: "x" } }];
    expect(foldSessionInsert(title)).toBe(title);
    const other: WriteOp[] = [{ op: "session.insert", row: sessionRow("s1") }, { op: "seq.reserve", session_id: "s2", upTo: 9 }];
    expect(foldSessionInsert(other)).toBe(other);
  });

  it("stores the same row as the ops applied one by one", async () => {
    const rowOf = async (fold: boolean) => {
      const path = tempDbPath();
      const store = new SqliteStore({ path });
      if (fold) await store.commit(firstCommit);
      else for (const op of firstCommit) await store.commit([op]);
      await store.close();
      const db = new Database(path, { readonly: true });
      const row = db.prepare("SELECT * FROM sessions WHERE id = 's1'").get();
      db.close();
      return row;
    };
    expect(await rowOf(true)).toEqual(await rowOf(false));
  });
});
