/** Config reload reaches live sessions; a removed key returns to its default. */
import { afterEach, describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import { buildProviderCatalog } from "../../src/agent/provider-catalog.js";
import { tempDbPath } from "../support/temp-db.js";
import { ME, settle, startHarness, TestViewer, type Harness } from "../support/manager-harness.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    sessionRooms(h.manager).lifecycle.stop();
    await h.store.close();
  }
});

const isLive = (h: Harness, id: string) => [...sessionRooms(h.manager).registry.values()].some((rt) => rt.id === id);

describe("live reload", () => {
  it("applies lifecycle settings to live sessions, and a removed key returns to its default", async () => {
    const h = await startHarness({ dbPath: tempDbPath(), clock: new FakeClock(), processId: "p", lifecycle: { startup_sweep: false } });
    harnesses.push(h);
    const apply = (file: Record<string, unknown>) => {
      const config = resolveConfig({}, {}, { lifecycle: { startup_sweep: false }, ...file });
      h.manager.applyConfig(config, buildProviderCatalog(config, h.clock));
    };

    apply({ lifecycle: { startup_sweep: false, orphan_grace_s: 5 } });
    const v1 = new TestViewer("v1");
    const s1 = await h.manager.create(ME, {}, v1);
    h.manager.detachViewer(v1);
    await h.clock.advance(5_100);
    await settle();
    expect(isLive(h, s1.session_id)).toBe(false);

    apply({}); // the key is gone from the file: back to 20 s, not to the last value
    const v2 = new TestViewer("v2");
    const s2 = await h.manager.create(ME, {}, v2);
    h.manager.detachViewer(v2);
    await h.clock.advance(10_000);
    expect(isLive(h, s2.session_id)).toBe(true);
    await h.clock.advance(10_100);
    await settle();
    expect(isLive(h, s2.session_id)).toBe(false);
  });

  it("applies the busy policy to live sessions", async () => {
    const h = await startHarness({ dbPath: tempDbPath(), clock: new FakeClock(), processId: "p", lifecycle: { startup_sweep: false } });
    harnesses.push(h);
    const snap = await h.manager.create(ME, {}, new TestViewer("v"));
    await h.manager.submit(ME, snap.session_id, "count to 100");
    const config = resolveConfig({}, {}, { busyPolicy: "reject" });
    h.manager.applyConfig(config, buildProviderCatalog(config, h.clock));
    await expect(h.manager.submit(ME, snap.session_id, "again")).rejects.toMatchObject({ code: 4009 });
  });
});
