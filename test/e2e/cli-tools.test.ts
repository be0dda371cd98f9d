/** `tether tools`, run as users run it, against a real MCP server and one that cannot start. */
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { stdioTestServer } from "../support/mcp-fixture.js";

const BIN = fileURLToPath(new URL("../../bin/tether.js", import.meta.url));

function tether(args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on("exit", (status) => resolve({ status, stdout, stderr })));
}

describe("tether tools", () => {
  it("lists servers with their state, and every tool with its policy; secrets stay hidden", async () => {
    const notes = stdioTestServer({ MCP_TEST_TOKEN: "${NOTES_TOKEN}" });
    const cfg = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
    writeFileSync(
      cfg,
      JSON.stringify({
        mcp_servers: { notes, broken: { command: "/nonexistent/mcp-server", env: { KEY: "plain-s3cret" } } },
        tools: { policy: { "notes__write_*": "deny" } },
      }),
    );
    const r = await tether(["tools", "--config", cfg], { NOTES_TOKEN: "tok-hidden-77" });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^notes\s+stdio: \S+\s+ready\s+12$/m);
    expect(r.stdout).toMatch(/^broken\s+stdio: \/nonexistent\/mcp-server\s+down: .*ENOENT/m);
    expect(r.stdout).toMatch(/^todo\s+auto\s+built-in\s+Replace the session's todo list/m);
    // The server says read-only; the policy still asks (an MCP server's hints grant nothing, #27).
    expect(r.stdout).toMatch(/^notes__echo\s+ask\s+read-only, idempotent\s+Echo the text back\.$/m);
    expect(r.stdout).toMatch(/^notes__write_note\s+deny\s+destructive\s+/m);
    expect(r.stdout).toMatch(/^notes__crash\s+ask\s+destructive\s+/m);
    expect(r.stdout).not.toMatch(/tok-hidden-77|plain-s3cret/);

    const json = JSON.parse((await tether(["tools", "--config", cfg, "--json"], { NOTES_TOKEN: "x" })).stdout);
    expect(json.servers.map((s: { name: string; state: string }) => [s.name, s.state])).toEqual([["notes", "ready"], ["broken", "down"]]);
  });

  it("shows the workspace's state in words: the roots, and whether commands run in the sandbox, not at all, or without one", async () => {
    const root = mkdtempSync(join(tmpdir(), "tether-root-"));
    const cfgOf = (workspace: unknown) => {
      const cfg = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
      writeFileSync(cfg, JSON.stringify({ tools: { workspace } }));
      return cfg;
    };
    const on = await tether(["tools", "--config", cfgOf({ roots: [root], env: ["NPM_CONFIG_REGISTRY"] })]);
    expect(on.status).toBe(0);
    expect(on.stdout).toContain(`Workspace tools: on; a session's cwd must lie in ${root}.`);
    expect(on.stdout).toMatch(/Sandbox: bubblewrap \(bubblewrap [\d.]+\)\. Commands see only the session's root/);
    expect(on.stdout).toContain("network off");
    expect(on.stdout).toContain("Environment of a command: PATH, HOME, LANG, TERM, NPM_CONFIG_REGISTRY; at most 8 background processes per session.");

    const none = await tether(["tools", "--config", cfgOf({ roots: [root], sandbox: "none" })]);
    expect(none.stdout).toMatch(/Sandbox: NONE \(tools\.workspace\.sandbox: none\)\. Commands run without a sandbox/);
    expect(none.stdout).toContain("/proc/$PPID/environ");

    const missing = await tether(["tools", "--config", cfgOf({ roots: [root] })], { TETHER_BWRAP: "/nonexistent/bwrap" });
    expect(missing.stdout).toContain("Sandbox: NOT AVAILABLE here: /nonexistent/bwrap is not installed");
    expect(missing.stdout).toContain("The terminal refuses to run commands");

    expect((await tether(["tools", "--config", cfgOf(true)])).stdout).toContain("Workspace tools: off — tools.workspace is on but names no roots");
    const json = JSON.parse((await tether(["tools", "--config", cfgOf({ roots: [root] }), "--json"], { TETHER_BWRAP: "/nonexistent/bwrap" })).stdout);
    expect(json.workspace).toMatchObject({ enabled: true, roots: [root], sandbox: { mode: "bwrap", state: "unavailable" }, network: false, max_processes: 8 });
  });

  it("names an unknown profile", async () => {
    const cfg = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
    writeFileSync(cfg, "{}\n");
    const r = await tether(["tools", "--config", cfg, "--profile", "nope"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown profile "nope"');
  });
});
