/**
 * `tools.approval_timeout_s` on a FakeClock: a request nobody answers resolves as deny (reason
 * timeout, by the gateway) exactly when it expires, and the turn goes on with the refusal.
 */
import { afterEach, describe, expect, it } from "vitest";
import { resolveConfig, toolsConfigFor } from "../../src/config/index.js";
import { ToolRegistry, ToolRuntime } from "../../src/agent/tools/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import { silentLogger } from "../../src/lib/logger.js";
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

describe("approval timeout", () => {
  it("denies a forgotten request when it expires, and the turn continues with the refusal", async () => {
    let ran = 0;
    const builtin = new ToolRegistry().register({
      spec: { name: "risky", description: "changes things", parameters: { type: "object" } },
      execute: async () => ++ran,
    });
    const config = toolsConfigFor(resolveConfig({}, { tools: { policy: { risky: "ask" } } }), "default");
    const tools = new ToolRuntime({ builtin, config, logger: silentLogger() });
    const h = await startHarness({ dbPath: tempDbPath(), clock: new FakeClock(), processId: "p1", lifecycle: { startup_sweep: false }, demoDelayMs: 0, tools, approvalTimeoutS: 30 });
    harnesses.push(h);
    const viewer = new TestViewer("a");
    const snap = await h.manager.create(ME, {}, viewer);
    const sub = await h.manager.submit(ME, snap.session_id, "call: risky {}");
    await settle();
    const opened = viewer.frames.find((f) => f.type === "request.opened")!;
    expect(opened.payload.expires_at).toBe(h.clock.now() + 30_000);
    expect(sessionRooms(h.manager).registry.stateOfId(snap.session_id)).toBe("awaiting");

    await h.clock.advance(29_999);
    expect(viewer.frames.some((f) => f.type === "request.resolved")).toBe(false);
    await h.clock.advance(1);
    await settle();
    expect(viewer.frames.find((f) => f.type === "request.resolved")!.payload).toEqual({ request_id: opened.payload.request_id, choice: "deny", by: "gateway", reason: "timeout" });
    const done = viewer.frames.find((f) => f.type === "turn.complete" && f.turn_id === sub.turn_id)!;
    expect(done.payload.status).toBe("complete");
    expect(viewer.frames.find((f) => f.type === "tool.complete")!.payload.error_info).toMatchObject({ code: "denied", message: "denied: nobody answered the approval in time" });
    expect(ran).toBe(0);
    expect(sessionRooms(h.manager).registry.stateOfId(snap.session_id)).toBe("live");
  });
});
