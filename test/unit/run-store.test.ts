/**
 * The runs tables (migration 11) on both stores: a run's row round-trips, a key's first binding
 * wins. And the queued prompts (migration 18): stored in order, moved by a put of the same turn id,
 * removed one by one or a whole session at once.
 */
import { afterAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import type { QueuedTurnRow, RunRow, Store } from "../../src/store/types.js";
import { dropTestSchemas, pgAvailable, pgTestUrl } from "../support/pg.js";
import { tempDbPath } from "../support/temp-db.js";

afterAll(dropTestSchemas);

const run: RunRow = {
  id: "run_1",
  principal: "alice",
  session_id: "ses_1",
  turn_id: "turn_1",
  after_seq: 2 ** 40,
  model: "demo",
  session_key: "conv",
  status: "queued",
  stop_requested: false,
  result: null,
  created_at: 2 ** 41,
  updated_at: 2 ** 41,
};

function runsContract(name: string, open: () => Promise<Store>, openSecond: (first: Store) => Promise<Store>) {
  describe(`runs on ${name}`, () => {
    it("stores, reads and patches a run", async () => {
      const store = await open();
      try {
        await store.runs!.insertRun(run);
        expect(await store.runs!.getRun("run_1")).toEqual(run);
        expect(await store.runs!.getRun("run_2")).toBeNull();
        await store.runs!.updateRun("run_1", { session_id: "ses_2", after_seq: 0, status: "completed", stop_requested: true, result: "{}", updated_at: 5 });
        expect(await store.runs!.getRun("run_1")).toEqual({ ...run, session_id: "ses_2", after_seq: 0, status: "completed", stop_requested: true, result: "{}", updated_at: 5 });
      } finally {
        await store.close();
      }
    });

    it("binds a key once per principal: racing binds (two stores) all answer the first", async () => {
      const a = await open();
      const b = await openSecond(a);
      try {
        expect(await a.runs!.sessionOfKey("alice", "k")).toBeNull();
        const bound = await Promise.all([a.runs!.bindKey("alice", "k", "ses_a", 1), b.runs!.bindKey("alice", "k", "ses_b", 1)]);
        expect(new Set(bound).size).toBe(1);
        expect(["ses_a", "ses_b"]).toContain(bound[0]);
        expect(await b.runs!.sessionOfKey("alice", "k")).toBe(bound[0]);
        expect(await a.runs!.bindKey("bob", "k", "ses_c", 2)).toBe("ses_c");
      } finally {
        await b.close();
        await a.close();
      }
    });

    it("keeps queued prompts in order until they start, are dropped or their session is closed", async () => {
      const store = await open();
      const q = (turn_id: string, session_id: string, position: number): QueuedTurnRow => ({
        turn_id, session_id, position, trace_id: `tr_${turn_id}`, text: `say ${turn_id}`, request_id: position === 2 ? "req" : null,
        extra: position === 2 ? '{"noInput":true}' : null, created_at: 2 ** 41 + position,
      });
      try {
        await store.commit([{ op: "queued_turn.put", row: q("t3", "ses_q", 3) }, { op: "queued_turn.put", row: q("t1", "ses_q", 1) }, { op: "queued_turn.put", row: q("t2", "ses_q", 2) }]);
        expect(await store.queuedTurns.queuedTurns("ses_q")).toEqual([q("t1", "ses_q", 1), q("t2", "ses_q", 2), q("t3", "ses_q", 3)]);
        expect(await store.queuedTurns.queuedSessions(10)).toEqual(["ses_q"]);
        // A put of a stored turn id moves it (a compression hands it to the continuation).
        await store.commit([{ op: "queued_turn.put", row: q("t3", "ses_r", 1) }]);
        expect((await store.queuedTurns.queuedTurns("ses_r")).map((r) => r.turn_id)).toEqual(["t3"]);
        await store.commit([{ op: "queued_turn.delete", turn_id: "t1" }]);
        expect((await store.queuedTurns.queuedTurns("ses_q")).map((r) => r.turn_id)).toEqual(["t2"]);
        await store.commit([{ op: "queued_turn.clear", session_id: "ses_q" }]);
        expect(await store.queuedTurns.queuedTurns("ses_q")).toEqual([]);
        expect(await store.queuedTurns.queuedSessions(10)).toEqual(["ses_r"]);
      } finally {
        await store.close();
      }
    });
  });
}

let sqlitePath = "";
runsContract(
  "sqlite",
  async () => {
    sqlitePath = tempDbPath();
    return new SqliteStore({ path: sqlitePath });
  },
  async () => new SqliteStore({ path: sqlitePath }),
);

let pgUrl = "";
describe.skipIf(!pgAvailable)("postgres", () => {
  runsContract(
    "postgres",
    async () => {
      pgUrl = pgTestUrl();
      return PostgresStore.open({ url: pgUrl });
    },
    async () => PostgresStore.open({ url: pgUrl }),
  );
});
