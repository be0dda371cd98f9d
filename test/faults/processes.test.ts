/**
 * Background processes and the gateway's own death, with real `tether serve` processes: SIGTERM
 * stops them — their whole tree, a `setsid` child and a `timeout … sleep` included (found by
 * scanning /proc for a marker) — and the record says `killed`; after a SIGKILL the sandbox dies
 * with the gateway (`--die-with-parent`), and the restarted gateway lists the process as `lost` —
 * never as running, never dropped — and does not signal its pid.
 */
import { mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RpcSocket } from "../support/rpc-socket.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { tempDbPath } from "../support/temp-db.js";
import { killSurvivors, survivors, uniqueMarker } from "../support/proc-scan.js";
import { sandboxStatus } from "../../src/agent/tools/workspace/index.js";
import { pidAlive } from "../support/pid-alive.js";

const sandbox = await sandboxStatus();
if (!sandbox.available) console.warn(`SKIPPED background process fault tests: ${sandbox.reason}`);
const markers: string[] = [];

const running: SpawnedGateway[] = [];
const leftovers: number[] = [];
afterAll(async () => {
  for (const g of running) await g.kill("SIGKILL");
  for (const m of markers) killSurvivors(m);
  for (const pid of leftovers) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // gone
    }
  }
});

const work = realpathSync(mkdtempSync(join(tmpdir(), "tether-proc-faults-")));

function configFile(): string {
  const path = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
  writeFileSync(path, JSON.stringify({ tools: { workspace: { roots: [work] }, policy: { terminal: "auto" } } }));
  return path;
}

async function gateway(db: string, config: string): Promise<SpawnedGateway> {
  const g = await spawnGateway(["--port", "0", "--db", db], { TETHER_CONFIG: config, TETHER_DEMO_DELAY_MS: "0" });
  running.push(g);
  return g;
}


async function startBackground(sock: RpcSocket, command = "echo up; sleep 300"): Promise<{ session_id: string; id: string; pid: number }> {
  const { session_id } = await sock.call("session.create", { cwd: work });
  await sock.call("prompt.submit", { session_id, text: `call: terminal ${JSON.stringify({ command, background: true })}` });
  const started = await sock.waitForEvent(session_id, (f) => f.type === "process.started", 30_000);
  await sock.waitForEvent(session_id, (f) => f.type === "turn.complete", 30_000);
  return { session_id, id: started.payload.id, pid: started.payload.pid };
}

describe.skipIf(!sandbox.available)("background processes when the gateway dies", () => {
  it("SIGTERM stops them, their whole tree (setsid, timeout) included; the record says killed", async () => {
    const db = tempDbPath();
    const cfg = configFile();
    const g = await gateway(db, cfg);
    const sock = await RpcSocket.open(g.wsUrl);
    const marker = uniqueMarker();
    markers.push(marker);
    const { session_id, id, pid } = await startBackground(sock, `setsid sleep ${marker} & timeout 100 sleep ${marker} & echo up; sleep 300`);
    leftovers.push(pid);
    expect(pidAlive(pid)).toBe(true);
    // The command has printed before the stop (on a busy machine the shell may not have run `echo` yet).
    await expect.poll(async () => (await sock.call("process.output", { session_id, id })).output, { timeout: 10_000 }).toBe("up\n");
    await expect.poll(() => survivors(marker).filter((p) => p.cmdline.startsWith("sleep")).length, { timeout: 10_000 }).toBe(2);
    expect(await g.kill("SIGTERM")).toBe(0);
    expect(pidAlive(pid)).toBe(false);
    expect(survivors(marker)).toEqual([]);
    sock.close();

    const again = await gateway(db, cfg);
    const s2 = await RpcSocket.open(again.wsUrl);
    await s2.call("session.resume", { session_id });
    expect((await s2.call("process.list", { session_id })).processes).toEqual([
      expect.objectContaining({ id, pid, status: "killed", signal: "SIGTERM", output_tail: "up\n" }),
    ]);
    s2.close();
  });

  it("SIGKILL: the sandbox dies with the gateway; after the restart the process is listed lost, and left alone", async () => {
    const db = tempDbPath();
    const cfg = configFile();
    const g = await gateway(db, cfg);
    const sock = await RpcSocket.open(g.wsUrl);
    const marker = uniqueMarker();
    markers.push(marker);
    const command = `setsid sleep ${marker} & echo up; sleep 300`;
    const { session_id, id, pid } = await startBackground(sock, command);
    leftovers.push(pid);
    await expect.poll(() => survivors(marker).filter((p) => p.cmdline.startsWith("sleep")).length, { timeout: 10_000 }).toBe(1);
    await g.kill("SIGKILL");
    sock.close();
    // --die-with-parent: nothing of it outlives the gateway, not even a setsid child.
    await expect.poll(() => survivors(marker), { timeout: 10_000 }).toEqual([]);

    const again = await gateway(db, cfg);
    const s2 = await RpcSocket.open(again.wsUrl);
    // Not live on the new gateway until resumed: a poller is told 4001.
    expect((await s2.request("process.list", { session_id })).error).toMatchObject({ code: 4001 });
    await s2.call("session.resume", { session_id });
    const { processes } = await s2.call("process.list", { session_id });
    expect(processes).toEqual([expect.objectContaining({ id, pid, status: "lost", command })]);
    expect(processes[0].exit_code).toBeUndefined();
    // Its pid is never signalled: it is whatever it is now.
    expect((await s2.call("process.kill", { session_id, id })).process.status).toBe("lost");
    s2.close();
  });
});
