/** The runs tables (migration 11) on both stores: a run's row round-trips, a key's first binding wins. */
import { afterAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import type { RunRow, Store } from "../../src/store/types.js";
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
