/**
 * A profile whose store hangs while opening answers 5070 after a bounded time (FakeClock), for
 * that profile only; the open is not repeated beside itself, and a store that comes back serves.
 */
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/lib/clock.js";
import { randomIds } from "../../src/lib/ids.js";
import { silentLogger } from "../../src/lib/logger.js";
import { HttpRecords, ProfileRegistry, type Profile, type SessionManager } from "../../src/sessions/index.js";
import { tempDbPath } from "../support/temp-db.js";
import { ME, settle, startHarness, type Harness } from "../support/manager-harness.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

const harnesses: Harness[] = [];

/** A profile around a harness's manager (the registry hands out profiles: sessions and records). */
function profileOf(name: string, h: Harness): Profile {
  return { name, sessions: h.manager, records: new HttpRecords({ store: h.store, committer: h.committer, epoch: h.manager.epoch, clock: h.clock, ids: randomIds }) };
}
afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    sessionRooms(h.manager).lifecycle.stop();
    await h.store.close().catch(() => undefined);
  }
});

describe("profile registry", () => {
  it("a store that hangs while opening answers 5070 after the timeout; other profiles serve; a late open is adopted", async () => {
    const clock = new FakeClock();
    const main = await startHarness({ dbPath: tempDbPath(), clock, processId: "P", lifecycle: { startup_sweep: false } });
    const work = await startHarness({ dbPath: tempDbPath(), clock, processId: "P", lifecycle: { startup_sweep: false } });
    harnesses.push(main, work);
    let release!: (p: Profile) => void;
    const opens: string[] = [];
    const registry = new ProfileRegistry({
      defaultProfile: () => profileOf("default", main),
      profileNames: () => ["slow", "work"],
      logger: silentLogger(),
      clock,
      openTimeoutMs: 5_000,
      open: (name) => {
        opens.push(name);
        if (name === "work") return Promise.resolve(profileOf("work", work));
        return new Promise<Profile>((resolve) => (release = resolve)); // hangs
      },
    });
    let answer: unknown;
    void registry.manager("slow").then(
      (m: SessionManager) => (answer = m),
      (err: unknown) => (answer = err),
    );
    await clock.advance(4_999);
    await settle();
    expect(answer).toBeUndefined();
    // Meanwhile every other profile serves.
    expect(await registry.manager("work")).toBe(work.manager);
    expect(await registry.manager(undefined)).toBe(main.manager);
    await clock.advance(1);
    await settle();
    expect(answer).toMatchObject({ code: 5070, message: "profile store unavailable: slow", data: { profile: "slow" } });

    // The next call waits for the same open (no second open beside it), bounded again.
    const again = registry.manager("slow");
    await settle();
    expect(opens.filter((n) => n === "slow")).toHaveLength(1);
    release(profileOf("slow", work)); // the store came back
    expect(await again).toBe(work.manager);
    expect(await registry.manager("slow")).toBe(work.manager);
    expect((await registry.manager("slow")).liveCount).toBe(0);
    expect(registry.stats(ME).sessions).toBe(0);
  });
});
