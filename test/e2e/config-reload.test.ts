/** A real `tether serve --config FILE`: SIGHUP reloads the file; a removed key returns to its default. */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDbPath } from "../support/temp-db.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { RpcSocket } from "../support/rpc-socket.js";

const running: SpawnedGateway[] = [];
afterEach(async () => {
  for (const g of running.splice(0)) await g.kill("SIGKILL");
});

async function stateOf(sock: RpcSocket, sid: string): Promise<string | undefined> {
  const list = await sock.call("session.list", { include_ended: true });
  return list.sessions.find((s: any) => s.session_id === sid)?.state;
}

async function until(pred: () => Promise<boolean>, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The "parked: reap armed" debug line of the session's last park, parsed. */
function parkLine(g: SpawnedGateway, sid: string): { reap_in_ms: number } | undefined {
  const lines = g.stderr().split("\n").filter((l) => l.includes("parked: reap armed") && l.includes(sid));
  return lines.length ? JSON.parse(lines.at(-1)!) : undefined;
}

describe("config reload", () => {
  it("reloads lifecycle settings on SIGHUP; removing the key restores the default grace", async () => {
    const cfg = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
    writeFileSync(cfg, "lifecycle:\n  orphan_grace_s: 2\n");
    const g = await spawnGateway(["--port", "0", "--db", tempDbPath(), "--config", cfg], { TETHER_LOG_LEVEL: "debug" });
    running.push(g);
    const watcher = await RpcSocket.open(g.wsUrl);

    const a = await RpcSocket.open(g.wsUrl);
    const s1 = (await a.call("session.create", {})).session_id;
    a.close();
    await until(async () => (await stateOf(watcher, s1)) === "idle"); // reaped: resumes on open

    writeFileSync(cfg, "# orphan_grace_s removed\n");
    g.child.kill("SIGHUP");
    await until(async () => g.stderr().includes("config reloaded"));

    const b = await RpcSocket.open(g.wsUrl);
    const s2 = (await b.call("session.create", {})).session_id;
    b.close();
    // The park armed its reap with the default 20 s grace, not the removed 2 s one.
    await until(async () => parkLine(g, s2) !== undefined);
    expect(parkLine(g, s2)!.reap_in_ms).toBe(20_000);
    expect(await stateOf(watcher, s2)).toBe("detached");
    watcher.close();
  });

  it("a reload that finds an unknown key is refused with its file line and keeps the running config", async () => {
    const cfg = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
    writeFileSync(cfg, "lifecycle:\n  orphan_grace_s: 2\n");
    const g = await spawnGateway(["--port", "0", "--db", tempDbPath(), "--config", cfg], { TETHER_LOG_LEVEL: "info" });
    running.push(g);
    // The typo would have restored the default 20 s grace, had it been dropped.
    writeFileSync(cfg, "lifecycle:\n  orphan_grace: 60\n");
    g.child.kill("SIGHUP");
    await until(async () => g.stderr().includes("config reload failed"), 20_000);
    const line = g.stderr().split("\n").find((l) => l.includes("config reload failed"))!;
    expect(JSON.parse(line).error).toBe(`${cfg}:2: unknown key lifecycle.orphan_grace (did you mean lifecycle.orphan_grace_s?)`);
    const watcher = await RpcSocket.open(g.wsUrl);
    const a = await RpcSocket.open(g.wsUrl);
    const sid = (await a.call("session.create", {})).session_id;
    a.close();
    await until(async () => (await stateOf(watcher, sid)) === "idle", 20_000); // the 2 s grace still applies
    watcher.close();
  }, 60_000);
});
