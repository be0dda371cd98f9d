/** Server heartbeats over the FakeClock: pings on the interval, terminate on a missed pong. */
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/lib/clock.js";
import { WsHeartbeat } from "../../src/gateway/ws-heartbeat.js";

function peer() {
  const p = { pings: 0, terminated: "" as string, ping: () => void p.pings++, terminate: (r: string) => void (p.terminated = r) };
  return p;
}

describe("WsHeartbeat", () => {
  it("pings every interval while pongs come, and never terminates", async () => {
    const clock = new FakeClock();
    const beats = new WsHeartbeat(clock, { intervalMs: 20_000, timeoutMs: 20_000 });
    const p = peer();
    const watch = beats.watch(p);
    await clock.advance(19_999);
    expect(p.pings).toBe(0);
    await clock.advance(1);
    for (let i = 1; i <= 5; i++) {
      expect(p.pings).toBe(i);
      await clock.advance(19_000); // answered late, but within the timeout
      watch.seen();
      await clock.advance(20_000); // the next ping comes one interval after the pong
    }
    expect(p.terminated).toBe("");
    watch.stop();
    expect(beats.size).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it("terminates a connection that misses a pong, exactly once, after the timeout", async () => {
    const clock = new FakeClock();
    const beats = new WsHeartbeat(clock, { intervalMs: 1000, timeoutMs: 500 });
    const p = peer();
    beats.watch(p);
    await clock.advance(1000);
    expect(p.pings).toBe(1);
    await clock.advance(499);
    expect(p.terminated).toBe("");
    await clock.advance(1);
    expect(p.terminated).toMatch(/no pong within 500 ms/);
    await clock.advance(10_000);
    expect(p.pings).toBe(1);
    expect(beats.size).toBe(0);
  });

  it("any frame from the peer counts as a pong; a stopped watch never fires", async () => {
    const clock = new FakeClock();
    const beats = new WsHeartbeat(clock, { intervalMs: 100, timeoutMs: 100 });
    const alive = peer();
    const dead = peer();
    const a = beats.watch(alive);
    const d = beats.watch(dead);
    d.stop();
    for (let i = 0; i < 10; i++) {
      await clock.advance(150);
      a.seen();
    }
    expect(alive.terminated).toBe("");
    expect(alive.pings).toBeGreaterThanOrEqual(5);
    expect(dead.pings).toBe(0);
    expect(dead.terminated).toBe("");
  });
});
