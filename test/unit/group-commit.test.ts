/** Group commit on a real SQLite file: one transaction per tick, in order, failures isolated. */
import { describe, expect, it } from "vitest";
import { GroupCommitter } from "../../src/events/index.js";
import { SqliteStore } from "../../src/store/index.js";
import type { WriteOp } from "../../src/store/types.js";
import { sessionRow } from "../support/store-contract.js";
import { tempDbPath } from "../support/temp-db.js";

class CountingStore extends SqliteStore {
  commits: number[] = [];
  override async commit(ops: readonly WriteOp[]): Promise<void> {
    this.commits.push(ops.length);
    return super.commit(ops);
  }
}

const event = (sid: string, seq: number): WriteOp => ({
  op: "event.append",
  row: { session_id: sid, seq, type: "t", payload: "{}", turn_id: null, trace_id: null, created_at: seq },
});

describe("GroupCommitter", () => {
  it("gathers writes enqueued in one tick into one transaction and keeps their order", async () => {
    const store = new CountingStore({ path: tempDbPath() });
    await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
    store.commits = [];
    const gc = new GroupCommitter(store);
    const done = Array.from({ length: 100 }, (_, i) => gc.enqueue([event("s1", i + 1)]));
    await Promise.all(done);
    expect(store.commits).toEqual([100]);
    expect((await store.readEvents("s1", 0, 1000)).map((e) => e.seq)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    await store.close();
  });

  it("fails only the unit whose write failed, not its neighbours from other sessions", async () => {
    const store = new SqliteStore({ path: tempDbPath() });
    await store.commit([{ op: "session.insert", row: sessionRow("s1") }, { op: "session.insert", row: sessionRow("s2") }]);
    const gc = new GroupCommitter(store);
    const a = gc.enqueue([event("s1", 1)]);
    const bad = gc.enqueue([{ op: "session.insert", row: sessionRow("s1") }]); // duplicate id
    const b = gc.enqueue([event("s2", 1)]);
    await expect(a).resolves.toBeUndefined();
    await expect(bad).rejects.toBeDefined();
    await expect(b).resolves.toBeUndefined();
    expect(await store.latestEventSeq("s1")).toBe(1);
    expect(await store.latestEventSeq("s2")).toBe(1);
    await gc.drain();
    await store.close();
  });

  it("splits batches above the op limit without reordering", async () => {
    const store = new CountingStore({ path: tempDbPath() });
    await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
    store.commits = [];
    const gc = new GroupCommitter(store, 10);
    await Promise.all(Array.from({ length: 25 }, (_, i) => gc.enqueue([event("s1", i + 1)])));
    expect(store.commits).toEqual([10, 10, 5]);
    expect((await store.readEvents("s1", 0, 100)).map((e) => e.seq)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    await store.close();
  });

  it("asks a unit's guard before writing it: refused, it is left out and settles in its place; asked again after a failed neighbour", async () => {
    const store = new CountingStore({ path: tempDbPath() });
    await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
    store.commits = [];
    const gc = new GroupCommitter(store);
    const order: string[] = [];
    const unit = (name: string, ops: WriteOp[], guard?: () => unknown) =>
      new Promise<unknown>((resolve) => gc.submit(ops, (err) => (order.push(name), resolve(err)), undefined, guard));
    // Refused when its batch is taken: nothing of it is written, the unit before it commits.
    const a = unit("a", [event("s1", 1)]);
    const refused = unit("refused", [event("s1", 2)], () => new Error("an earlier write failed"));
    expect(await a).toBeNull();
    expect(await refused).toMatchObject({ message: "an earlier write failed" });
    expect(order).toEqual(["a", "refused"]);
    expect(store.commits).toEqual([1]);
    // Its batch fails: each unit is retried alone, and the guard sees the failure before it.
    let failed = false;
    const bad = new Promise<unknown>((resolve) =>
      gc.submit([{ op: "session.insert", row: sessionRow("s1") }], (err) => ((failed = err !== null), resolve(err))),
    ); // duplicate id
    const guarded = unit("guarded", [event("s1", 3)], () => (failed ? new Error("refused after bad") : undefined));
    expect(await bad).toBeTruthy();
    expect(await guarded).toMatchObject({ message: "refused after bad" });
    expect((await store.readEvents("s1", 0, 10)).map((e) => e.seq)).toEqual([1]);
    await store.close();
  });
});
