/**
 * SIGTERM while a stdio MCP server is still connecting: the gateway's stop kills the child it
 * spawned. The server here is a script that never answers `initialize` (it writes its pid and
 * sleeps), so the connect is in flight at the signal; before the fix the stop forgot the attempt
 * and the child lived on under PID 1 after the gateway exited.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { pidAlive } from "../../src/lib/pid-alive.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { tempDbPath } from "../support/temp-db.js";
import { waitUntil } from "./fault-support.js";

const running: SpawnedGateway[] = [];
const children: number[] = [];
afterAll(async () => {
  for (const g of running) await g.kill("SIGKILL");
  // A child left behind by a failing run is ours to end (by its own pid, nothing broader).
  for (const pid of children) if (pidAlive(pid)) process.kill(pid, "SIGKILL");
});

/** A stdio "MCP server" that never finishes its handshake: it records its pid and sleeps. */
function hangingServer(dir: string): { script: string; pidFile: string } {
  const script = join(dir, "hang.cjs");
  const pidFile = join(dir, "hang.pid");
  writeFileSync(script, `require("node:fs").writeFileSync(process.argv[2], String(process.pid));\nsetInterval(() => {}, 1 << 30);\n`);
  return { script, pidFile };
}

describe("SIGTERM while an MCP server connects", () => {
  it("the stdio child that never finished its handshake is gone once the gateway exited", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tether-mcp-hang-"));
    const { script, pidFile } = hangingServer(dir);
    const config = join(dir, "config.yaml");
    // A long connect deadline: without the fix nothing but that deadline would ever close the child.
    writeFileSync(config, JSON.stringify({ mcp_servers: { hang: { command: process.execPath, args: [script, pidFile] } }, tools: { connect_timeout_s: 120 } }));
    const g = await spawnGateway(["--port", "0", "--db", tempDbPath()], { TETHER_CONFIG: config });
    running.push(g);

    // Connections are lazy: a turn's tool offer starts the dial (and waits for it).
    const turn = fetch(`${g.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "demo", messages: [{ role: "user", content: "hello" }] }),
    }).catch(() => undefined);
    await waitUntil(() => existsSync(pidFile) && readFileSync(pidFile, "utf8") !== "", 30_000, "the MCP child to start");
    const pid = Number(readFileSync(pidFile, "utf8"));
    children.push(pid);
    expect(pidAlive(pid)).toBe(true);

    expect(await g.kill("SIGTERM")).toBe(0);
    await turn;
    // The stop waited for the child (the SDK's close: stdin end, then SIGTERM): gone as the gateway exits.
    expect(pidAlive(pid)).toBe(false);
  });
});
