/**
 * Finding 5 of #27 on a real `tether serve` process: the gateway's environment holds secrets
 * (TETHER_API_KEYS, GITHUB_PAT, a DATABASE_URL with a password, OTEL_EXPORTER_OTLP_HEADERS,
 * STRIPE_SK) and its store lies in a data folder. A command the terminal runs sees none of them:
 * `env` prints the allowlist only, `/proc/$PPID/environ` and `/proc/1/environ` are the sandbox's
 * own, and the data folder and the SQLite file are not there. With `sandbox: none` (the operator's
 * explicit choice) `/proc/$PPID/environ` is the gateway's again — why it is not the default.
 */
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sandboxStatus } from "../../src/agent/tools/workspace/index.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";

const sandbox = await sandboxStatus();
if (!sandbox.available) console.warn(`SKIPPED the sandbox secrets test: ${sandbox.reason}`);

const SECRETS = {
  TETHER_API_KEYS: "alice:k-alice-0123456789",
  GITHUB_PAT: "ghp_secretvalue0123456789",
  DATABASE_URL: "postgres://app:pw-hunter2-secret@db.internal/app",
  OTEL_EXPORTER_OTLP_HEADERS: "x-honeycomb-team=otel-secret-abc",
  STRIPE_SK: "sk_live_secret_987654321",
};

const base = realpathSync(mkdtempSync(join(tmpdir(), "tether-secrets-")));
const work = join(base, "work");
const data = join(base, "data");
mkdirSync(work);
mkdirSync(data);
const running: SpawnedGateway[] = [];
afterAll(async () => {
  for (const g of running) await g.kill("SIGKILL");
});

async function gateway(sandboxMode: "bwrap" | "none"): Promise<SpawnedGateway> {
  const cfg = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
  writeFileSync(cfg, JSON.stringify({ tools: { workspace: { roots: [work], sandbox: sandboxMode }, policy: { terminal: "auto" } } }));
  const db = join(data, `${sandboxMode}.db`);
  const g = await spawnGateway(["--port", "0", "--db", db], { TETHER_CONFIG: cfg, TETHER_DEMO_DELAY_MS: "0", ...SECRETS });
  running.push(g);
  return g;
}

async function terminal(g: SpawnedGateway, command: string): Promise<string> {
  const sock = await RpcSocket.open(`${g.wsUrl}?token=k-alice-0123456789`);
  try {
    const { session_id } = await sock.call("session.create", { cwd: work });
    const sub = await sock.call("prompt.submit", { session_id, text: `call: terminal ${JSON.stringify({ command })}` });
    await sock.waitForEvent(session_id, (f) => f.type === "turn.complete" && f.payload.turn_id === sub.turn_id, 30_000);
    const done = sock.sessionEvents(session_id).find((f) => f.type === "tool.complete" && f.turn_id === sub.turn_id)!;
    expect(done.payload.error_info).toBeUndefined();
    return (done.payload.result as { output: string }).output;
  } finally {
    sock.close();
  }
}

const PROBE = [
  "env",
  "echo ---ppid",
  "tr '\\0' '\\n' < /proc/$PPID/environ",
  "echo ---pid1",
  "tr '\\0' '\\n' < /proc/1/environ",
  `echo ---data; ls -la ${data} 2>&1; head -c 200 ${join(data, "bwrap.db")} 2>&1`,
  "echo ---procs; ls /proc | grep -c '^[0-9]'",
].join("; ");

describe.skipIf(!sandbox.available)("a sandboxed command and the gateway's secrets", () => {
  it("env, /proc/$PPID/environ and /proc/1/environ hold none of them; the data folder is not there", async () => {
    const g = await gateway("bwrap");
    const out = await terminal(g, PROBE);
    for (const [name, value] of Object.entries(SECRETS)) {
      expect(out, name).not.toContain(value);
      expect(out, name).not.toContain(`${name}=`);
    }
    expect(out).toContain("---ppid\nPATH=");
    const dataPart = out.slice(out.indexOf("---data"), out.indexOf("---procs"));
    expect(dataPart).toMatch(/No such file or directory/);
    expect(dataPart).not.toContain("SQLite format");
    // Its own processes only: bwrap's init, the shell, ls and grep.
    expect(Number(out.trim().split("\n").at(-1))).toBeLessThan(6);
  });

  it("with sandbox: none, said in the config, /proc/$PPID/environ is the gateway's again", async () => {
    const g = await gateway("none");
    const out = await terminal(g, "tr '\\0' '\\n' < /proc/$PPID/environ");
    expect(out).toContain(SECRETS.TETHER_API_KEYS);
    // The command's own environment is still the allowlist.
    expect(await terminal(g, "env")).not.toContain(SECRETS.GITHUB_PAT);
  });
});
