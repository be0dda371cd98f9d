/** The Store contract on a real PostgreSQL server, plus what is PostgreSQL's own. */
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/index.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { PG_MIGRATIONS } from "../../src/store/postgres/migrations.js";
import { FenceError } from "../../src/store/types.js";
import { dropTestSchemas, PG_URL, pgAvailable, pgTestUrl, testSchema } from "../support/pg.js";
import { sessionRow, storeContract } from "../support/store-contract.js";

afterAll(dropTestSchemas);

describe.skipIf(!pgAvailable)("PostgreSQL store", () => {
  storeContract("postgres", () => PostgresStore.open({ url: pgTestUrl() }));

  it("openStore picks PostgreSQL for a postgres:// URL; migrations apply once, even when nodes open together", async () => {
    const url = pgTestUrl();
    const stores = await Promise.all([openStore(url), openStore(url), openStore(url)]);
    expect(stores.map((s) => s.kind)).toEqual(["postgres", "postgres", "postgres"]);
    await Promise.all(stores.map((s) => s.close()));
    const again = await openStore(url);
    await again.close();
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      const schema = new URL(url).searchParams.get("schema");
      const r = await client.query(`SELECT version FROM ${schema}.schema_migrations ORDER BY version`);
      expect(r.rows.map((x) => x.version)).toEqual(PG_MIGRATIONS.map((m) => m.version));
    } finally {
      await client.end();
    }
  });

  it("keeps event payload text byte for byte (it is spliced into wire JSON)", async () => {
    const store = await PostgresStore.open({ url: pgTestUrl() });
    try {
      await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
      const payload = '{"z":1,  "a":"é\\u0000","n":1.50}';
      await store.commit([
        { op: "event.append", row: { session_id: "s1", seq: 1, type: "t", payload, turn_id: null, trace_id: null, created_at: 2 ** 41 } },
      ]);
      const [row] = await store.readEvents("s1", 0, 10);
      expect(row).toEqual({ session_id: "s1", seq: 1, type: "t", payload, turn_id: null, trace_id: null, created_at: 2 ** 41 });
    } finally {
      await store.close();
    }
  });

  it("two nodes racing for one lease: exactly one wins; a takeover waits for the old owner's write, then fences it", async () => {
    const url = pgTestUrl();
    const a = await PostgresStore.open({ url });
    const b = await PostgresStore.open({ url });
    try {
      await a.commit([{ op: "session.insert", row: sessionRow("s1") }]);
      const beat = (id: string) => ({ id, pid: 1, host: "h", started_at: 0, last_beat: 10_000 });
      await a.beat(beat("A"), 11_000);
      await b.beat(beat("B"), 11_000);
      const req = (owner: string) => ({ session_id: "s1", owner, now: 10_000, ttlMs: 1000, deadBefore: 7_000, takeDetached: false });
      const results = await Promise.all([a.acquireLease(req("A")), b.acquireLease(req("B")), a.acquireLease(req("A")), b.acquireLease(req("B"))]);
      const lease = await a.getLease("s1");
      // Every grant went to the one owner the row names; every refusal named it.
      expect(results.filter((r) => r.acquired).length).toBeGreaterThan(0);
      expect(results.every((r, i) => (r.acquired ? (i % 2 === 0 ? "A" : "B") === lease!.owner : r.holder.owner === lease!.owner))).toBe(true);
      expect(lease!.token).toBe(1);
      const owner = lease!.owner;
      const [ownerStore, other, otherId] = owner === "A" ? [a, b, "B"] : [b, a, "A"];
      // 200 fenced writes of the owner race a takeover by the other node (the owner looks expired).
      const ev = (seq: number) => ({ session_id: "s1", seq, type: "x", payload: "{}", turn_id: null, trace_id: null, created_at: seq });
      const writes = Array.from({ length: 200 }, (_, i) =>
        ownerStore.commit([{ op: "lease.fence", session_id: "s1", owner, token: 1 }, { op: "event.append", row: ev(i + 1) }]).then(
          () => "ok" as const,
          (err: unknown) => {
            expect(err).toBeInstanceOf(FenceError);
            return "fenced" as const;
          },
        ),
      );
      const takeover = other.acquireLease({ ...req(otherId), now: 20_000, deadBefore: 17_000 });
      const outcomes = await Promise.all(writes);
      expect(await takeover).toMatchObject({ acquired: true, token: 2 });
      // Whatever landed did so before the takeover; nothing after it.
      const stored = (await a.readEvents("s1", 0, 1000)).length;
      expect(stored).toBe(outcomes.filter((o) => o === "ok").length);
      await expect(
        ownerStore.commit([{ op: "lease.fence", session_id: "s1", owner, token: 1 }, { op: "event.append", row: ev(999) }]),
      ).rejects.toBeInstanceOf(FenceError);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("refuses a schema name that is not a plain identifier", async () => {
    await expect(PostgresStore.open({ url: PG_URL, schema: "x; DROP TABLE y" })).rejects.toThrow(/schema name/);
    expect(testSchema()).toMatch(/^tether_test_[0-9a-f]{12}$/);
  });
});
