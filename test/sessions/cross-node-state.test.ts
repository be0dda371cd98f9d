/**
 * `session.list` / `get` state across nodes: two SessionManagers ("nodes" A and B, own process
 * ids, own store connections) on one store — a SQLite file, and PostgreSQL — and one fake clock.
 * A session live on A is shown by B from A's lease: live while A holds it with a viewer, detached
 * once A parked it or A is dead, ended once ended.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/lib/clock.js";
import type { LifecycleConfig } from "../../src/config/index.js";
import { SqliteStore } from "../../src/store/index.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import type { Store } from "../../src/store/types.js";
import { dropTestSchemas, pgAvailable, pgTestUrl } from "../support/pg.js";
import { tempDbPath } from "../support/temp-db.js";
import { ME, settle, startHarness, TestViewer, type Harness } from "../support/manager-harness.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    sessionRooms(h.manager).lifecycle.stop();
    await h.store.close().catch(() => undefined);
  }
});
afterAll(dropTestSchemas);

type OpenStore = () => Promise<Store>;

/** One store location, opened once per node (as separate processes would). */
function sqliteStores(): OpenStore {
  const path = tempDbPath();
  return async () => new SqliteStore({ path });
}

function postgresStores(): OpenStore {
  const url = pgTestUrl();
  return () => PostgresStore.open({ url });
}

async function node(open: OpenStore, clock: FakeClock, processId: string, lifecycle: Partial<LifecycleConfig> = {}) {
  const store = await open();
  // No sweep: a dead node's sessions stay open, so what B shows of them is the lease's story.
  const h = await startHarness({ dbPath: "", store, clock, processId, lifecycle: { startup_sweep: false, ...lifecycle } });
  harnesses.push(h);
  return h;
}

async function stateOn(h: Harness, sessionId: string): Promise<string | undefined> {
  const list = await h.manager.list(ME, { include_ended: true });
  return list.sessions.find((s) => s.session_id === sessionId)?.state;
}

/**
 * The owner marks its lease without awaiting (fire-and-forget), and PostgreSQL answers over the
 * network: poll B's view (real time, the fake clock stays put) until it says `want`.
 */
async function eventuallyState(h: Harness, sessionId: string, want: string): Promise<void> {
  let got: string | undefined;
  for (let i = 0; i < 100; i++) {
    await settle();
    got = await stateOn(h, sessionId);
    if (got === want) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(got, `state of ${sessionId} on ${sessionRooms(h.manager).ownership.processId}`).toBe(want);
}

const backends: Array<[string, () => OpenStore, boolean]> = [
  ["SQLite file", sqliteStores, true],
  ["PostgreSQL", postgresStores, pgAvailable],
];

for (const [name, stores, available] of backends) {
  describe.skipIf(!available)(`session state across nodes (${name})`, () => {
    it("B shows A's viewed session live, detached once A's viewer detaches or disconnects, live again on re-attach, then ended", async () => {
      const open = stores();
      const clock = new FakeClock();
      const a = await node(open, clock, "A");
      const b = await node(open, clock, "B");
      const va = new TestViewer("va");
      const sid = (await a.manager.create(ME, { title: "on A" }, va)).session_id;
      const other = (await a.manager.create(ME, { title: "parked on A" })).session_id; // never viewed

      // One batched lease read per list page, however many sessions it shows.
      let reads = 0;
      const leaseStates = b.store.leaseStates.bind(b.store);
      b.store.leaseStates = (ids, deadBefore) => {
        reads++;
        return leaseStates(ids, deadBefore);
      };
      await eventuallyState(b, other, "detached");
      reads = 0;
      const page = await b.manager.list(ME, {});
      expect(reads).toBe(1);
      expect(Object.fromEntries(page.sessions.map((s) => [s.session_id, s.state]))).toEqual({ [sid]: "live", [other]: "detached" });
      // The sessions API's get shares it; A (the owner) agrees.
      expect((await b.manager.get(ME, sid)).state).toBe("live");
      expect(await stateOn(a, sid)).toBe("live");

      // session.detach on A: A parks it, B sees detached.
      expect(await a.manager.detach(ME, sid, va)).toEqual({ detached: true });
      await eventuallyState(b, sid, "detached");
      expect((await b.manager.get(ME, sid)).state).toBe("detached");
      expect(await stateOn(a, sid)).toBe("detached");

      // A viewer attaches again on A: live on B.
      await a.manager.resume(ME, sid, va);
      await eventuallyState(b, sid, "live");

      // A's viewer disconnects: detached on B.
      a.manager.detachViewer(va);
      await eventuallyState(b, sid, "detached");

      // Ended (closed on A): ended on B.
      await a.manager.resume(ME, sid, va);
      await eventuallyState(b, sid, "live");
      await a.manager.close(ME, sid);
      await eventuallyState(b, sid, "ended");
      expect(await stateOn(a, sid)).toBe("ended");
    });

    it("B shows a session of a dead A detached once A's heartbeat is 3 beats old, even though A's lease has not expired", async () => {
      const open = stores();
      const clock = new FakeClock();
      // Leases far longer than the heartbeat: only the heartbeat can tell B that A is dead.
      const lifecycle = { heartbeat_s: 10, lease_ttl_s: 600 };
      const a = await node(open, clock, "A", lifecycle);
      const b = await node(open, clock, "B", lifecycle);
      const sid = (await a.manager.create(ME, {}, new TestViewer("va"))).session_id;
      await eventuallyState(b, sid, "live");

      // A dies with its viewer attached: no more beats, nothing released, the lease still says attached.
      sessionRooms(a.manager).lifecycle.stop();
      await clock.advance(25_000); // 2 beats missed: A still counts as alive
      await settle();
      expect(await stateOn(b, sid)).toBe("live");
      await clock.advance(10_000); // 3 beats missed: dead
      await settle();
      expect(await stateOn(b, sid)).toBe("detached");
      expect((await b.manager.get(ME, sid)).state).toBe("detached");
      expect(await b.store.getLease(sid)).toMatchObject({ owner: "A", detached: false });

      // The session is free to take: a resume on B gets it, and B shows its own viewer as live.
      await b.manager.resume(ME, sid, new TestViewer("vb"));
      expect(await stateOn(b, sid)).toBe("live");
    });
  });
}
