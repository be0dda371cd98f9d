/**
 * Reconnects without a storm, on a FakeClock: 1,000 sessions asking for a failing server's tools
 * at once make ONE connect attempt; while it is down, asking makes none; the retry timer makes one
 * per backoff step (exponential, jittered, capped); once it answers, it is back for everyone.
 * The attempts are real (a command that does not exist, then the SDK-built test server).
 */
import { describe, expect, it } from "vitest";
import { resolveConfig, toolsConfigFor } from "../../src/config/index.js";
import { backoffDelay, connectMcp, McpPool, type McpConnector } from "../../src/agent/tools/mcp/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import { silentLogger } from "../../src/lib/logger.js";
import { eventually, stdioTestServer } from "../support/mcp-fixture.js";

describe("backoffDelay", () => {
  it("doubles from 1 s to a 60 s cap, with equal jitter (half fixed, half random)", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 20].map((n) => backoffDelay(n, undefined, () => 1))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000,
    ]);
    expect([1, 2, 7].map((n) => backoffDelay(n, undefined, () => 0))).toEqual([500, 1000, 30_000]);
  });
});

describe("one failing server, 1,000 sessions", () => {
  it("makes at most one connect attempt at a time, and only when the backoff says so", async () => {
    const clock = new FakeClock();
    let healthy = false;
    const real = stdioTestServer();
    let attempts = 0;
    let inFlight = 0;
    let maxInFlight = 0;
    // Every attempt is a real connect: to a command that does not exist, until the test says the server is fixed.
    const connector: McpConnector = async (server, handlers, signal) => {
      attempts++;
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        const target = healthy
          ? { ...server, transport: { kind: "stdio" as const, command: real.command!, args: real.args as string[], env: {}, cwd: real.cwd! } }
          : { ...server, transport: { kind: "stdio" as const, command: "/nonexistent/mcp-server", args: [], env: {} } };
        return await connectMcp(target, handlers, signal);
      } finally {
        inFlight--;
      }
    };
    const config = toolsConfigFor(resolveConfig({}, { mcp_servers: { flaky: { command: "placeholder" } } }), "default");
    const pool = new McpPool({ clock, logger: silentLogger(), env: {}, config, connector, random: () => 0.5 });
    try {
      const ask = () => Promise.all(Array.from({ length: 1000 }, (_, i) => pool.list({ sessionId: `s${i}`, signal: new AbortController().signal }, new Set())));

      const first = await ask();
      expect(attempts).toBe(1);
      expect(first.every((l) => l.tools.length === 0 && l.unavailable[0]?.server === "flaky")).toBe(true);
      const conn = pool.connection("flaky")!;
      expect(conn.status()).toMatchObject({ state: "down", failures: 1, retry_at: clock.now() + 750 });

      // Asking while down never dials.
      await ask();
      await clock.advance(749);
      await ask();
      expect(attempts).toBe(1);

      // The timer makes exactly one attempt per step: 750 ms, then 1.5 s, then 3 s (jitter 0.5).
      await clock.advance(1);
      await eventually(() => conn.status().failures === 2, 5000, "the second failure");
      expect(attempts).toBe(2);
      expect(conn.status().retry_at).toBe(clock.now() + 1500);
      await ask();
      await clock.advance(1499);
      expect(attempts).toBe(2);
      await clock.advance(1);
      await eventually(() => conn.status().failures === 3, 5000, "the third failure");
      expect(conn.status().retry_at).toBe(clock.now() + 3000);

      // Fixed: the next timed attempt connects, and every session gets the tools again.
      healthy = true;
      await clock.advance(3000);
      await eventually(() => conn.currentState === "ready", 15_000, "the server to connect");
      const back = await ask();
      expect(back.every((l) => l.tools.some((t) => t.tool.spec.name === "flaky__echo") && l.unavailable.length === 0)).toBe(true);
      expect(attempts).toBe(4);
      expect(maxInFlight).toBe(1);
      expect(conn.status().failures).toBe(0);
    } finally {
      await pool.close();
    }
  });

  it("an idle pool dials nothing: servers connect on first use", async () => {
    const clock = new FakeClock();
    let attempts = 0;
    const connector: McpConnector = async () => {
      attempts++;
      throw new Error("unreachable");
    };
    const config = toolsConfigFor(resolveConfig({}, { mcp_servers: { a: { command: "x" }, b: { url: "http://127.0.0.1:9/mcp" } } }), "default");
    const pool = new McpPool({ clock, logger: silentLogger(), env: {}, config, connector });
    await clock.advance(120_000);
    expect(attempts).toBe(0);
    expect(pool.connection("a")!.currentState).toBe("idle");
    await pool.close();
  });
});
