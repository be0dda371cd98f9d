/** `tether serve` as users run it: its one stdout line, its flags and its refusal to be unsafe. */
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { tempDbPath } from "../support/start-server.js";
import { spawnGateway, spawnGatewayExpectingFailure } from "../support/spawn-gateway.js";
import { RpcSocket } from "../support/rpc-socket.js";

const TETHER_BIN = fileURLToPath(new URL("../../bin/tether.js", import.meta.url));

describe("tether serve", () => {
  it("prints exactly one line when ready, serves /healthz and /ws, honours env equivalents", async () => {
    const db = tempDbPath("nested/dir/tether.db");
    const g = await spawnGateway([], { TETHER_PORT: "0", TETHER_DB: db, TETHER_HOST: "127.0.0.1", TETHER_LOG_LEVEL: "info" });
    try {
      expect(g.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const health = await fetch(`${g.url}/healthz`);
      expect(health.status).toBe(200);
      const ready = await fetch(`${g.url}/readyz`);
      expect(ready.status).toBe(200);
      const sock = await RpcSocket.open(g.wsUrl);
      expect(await sock.call("ping")).toMatchObject({ pong: true });
      expect((await sock.call("gateway.info")).capabilities).toEqual(expect.arrayContaining(["http.openai", "http.sessions"]));
      // A commit starts the store's background checkpoint thread; the stop below must still run to its end.
      await sock.call("session.create", {});
      sock.close();
    } finally {
      expect(await g.kill("SIGTERM")).toBe(0);
    }
    expect(g.stdoutLines.filter((l) => l.length > 0)).toEqual([`tether listening on ${g.url}`]);
    // The whole stop ran (the store closed, traces flushed, the last line logged), not an exit halfway.
    expect(g.stderr()).toContain('"msg":"gateway stopped"');
  });

  it("SIGTERM exits at once even when nobody reads its logs any more (`tether serve 2>&1 | head -2`)", async () => {
    // The gateway's stdout and stderr are one pipe, as with `2>&1 | head -2`; once it printed its
    // first lines the reader goes away, so every later write ("stopping"…) fails with EPIPE.
    // An existing config file: no "wrote a starter config" line right after the first ones.
    const config = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "c.yaml");
    writeFileSync(config, "# empty\n");
    const child = spawn("sh", ["-c", `exec "${process.execPath}" "${TETHER_BIN}" serve --port 0 --db "${tempDbPath()}" 2>&1`], {
      stdio: ["ignore", "pipe", "ignore"],
      env: { ...process.env, TETHER_LOG_LEVEL: "info", TETHER_CONFIG: config },
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    let out = "";
    await new Promise<void>((resolve) =>
      child.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        // Both first lines (the "gateway started" log and the listening line), as head -2 would.
        if (out.includes("tether listening on") && out.includes('"msg":"gateway started"')) resolve();
      }),
    );
    child.stdout!.destroy();
    await new Promise((r) => setTimeout(r, 300)); // the gateway is idle: nothing more was written yet
    child.kill("SIGTERM");
    const timeout = new Promise<string>((r) => setTimeout(() => r("still running 15 s after SIGTERM"), 15_000));
    const code = await Promise.race([exited, timeout]);
    if (typeof code === "string") child.kill("SIGKILL");
    expect(code).toBe(0);
  }, 30_000);

  it("--ws-only serves only /ws and /healthz", async () => {
    const g = await spawnGateway(["--port", "0", "--db", tempDbPath(), "--ws-only"]);
    try {
      expect((await fetch(`${g.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${g.url}/readyz`)).status).toBe(404);
      const sock = await RpcSocket.open(g.wsUrl);
      const info = await sock.call("gateway.info");
      expect(info).toMatchObject({ name: "tether" });
      // It tells the truth: no HTTP API here, so no http.* capability.
      expect(info.capabilities.filter((c: string) => c.startsWith("http."))).toEqual([]);
      expect(info.capabilities).toContain("ws");
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

  it("refuses a config file with an unknown key at start: file line, nearest key, exit 2, nothing listening", async () => {
    const config = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "c.yaml");
    writeFileSync(config, "port: 0\nretension:\n  ended_after_days: 30\n");
    const r = await spawnGatewayExpectingFailure(["--db", tempDbPath()], { TETHER_CONFIG: config });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(`tether: ${config}:2: unknown key retension (did you mean retention?)\n`);
  });

  it("a store or bus that cannot be opened is one line saying which and why (no stack), exit 1", async () => {
    const pg = await spawnGatewayExpectingFailure(["--port", "0", "--store", "postgres://tether:s3cret@127.0.0.1:1/tether"]);
    expect(pg.code).toBe(1);
    expect(pg.stderr).toBe("tether: cannot open the store postgres://tether:***@127.0.0.1:1/tether: connect ECONNREFUSED 127.0.0.1:1 (is the server running, and listening there?)\n");
    const redis = await spawnGatewayExpectingFailure(["--port", "0", "--db", tempDbPath(), "--bus", "redis://127.0.0.1:1"]);
    expect(redis.code).toBe(1);
    expect(redis.stderr).toBe("tether: cannot connect to the bus redis://127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1 (is the server running, and listening there?)\n");
    // A folder that cannot exist (a file is in its place).
    const bad = await spawnGatewayExpectingFailure(["--port", "0", "--db", "/dev/null/tether.db"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^tether: cannot open the store \/dev\/null\/tether\.db: [^\n]+\n$/);
  });
});
