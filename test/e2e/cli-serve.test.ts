/** `tether serve` as users run it: its one stdout line, its flags and its refusal to be unsafe. */
import { describe, expect, it } from "vitest";
import { tempDbPath } from "../support/start-server.js";
import { spawnGateway, spawnGatewayExpectingFailure } from "../support/spawn-gateway.js";
import { RpcSocket } from "../support/rpc-socket.js";

describe("tether serve", () => {
  it("prints exactly one line when ready, serves /healthz and /ws, honours env equivalents", async () => {
    const db = tempDbPath("nested/dir/tether.db");
    const g = await spawnGateway([], { TETHER_PORT: "0", TETHER_DB: db, TETHER_HOST: "127.0.0.1" });
    try {
      expect(g.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const health = await fetch(`${g.url}/healthz`);
      expect(health.status).toBe(200);
      const ready = await fetch(`${g.url}/readyz`);
      expect(ready.status).toBe(200);
      const sock = await RpcSocket.open(g.wsUrl);
      expect(await sock.call("ping")).toMatchObject({ pong: true });
      sock.close();
    } finally {
      expect(await g.kill("SIGTERM")).toBe(0);
    }
    expect(g.stdoutLines.filter((l) => l.length > 0)).toEqual([`tether listening on ${g.url}`]);
  });

  it("--ws-only serves only /ws and /healthz", async () => {
    const g = await spawnGateway(["--port", "0", "--db", tempDbPath(), "--ws-only"]);
    try {
      expect((await fetch(`${g.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${g.url}/readyz`)).status).toBe(404);
      const sock = await RpcSocket.open(g.wsUrl);
      expect(await sock.call("gateway.info")).toMatchObject({ name: "tether" });
      sock.close();
    } finally {
      await g.kill();
    }
  });

  it("refuses a non-loopback bind without an API key, with a clear message", async () => {
    const r = await spawnGatewayExpectingFailure(["--host", "0.0.0.0", "--port", "0", "--db", tempDbPath()], {
      TETHER_API_KEY: "",
    });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/refusing to bind 0\.0\.0\.0 without an API key/);
  });

  it("rejects a bad --port with a clear message", async () => {
    const r = await spawnGatewayExpectingFailure(["--port", "banana", "--db", tempDbPath()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--port/);
  });
});
