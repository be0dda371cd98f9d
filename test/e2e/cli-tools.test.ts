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
    expect(r.stdout).toMatch(/^notes\s+stdio: \S+\s+ready\s+11$/m);
    expect(r.stdout).toMatch(/^broken\s+stdio: \/nonexistent\/mcp-server\s+down: .*ENOENT/m);
    expect(r.stdout).toMatch(/^todo\s+auto\s+built-in\s+Replace the session's todo list/m);
    expect(r.stdout).toMatch(/^notes__echo\s+auto\s+read-only, idempotent\s+Echo the text back\.$/m);
    expect(r.stdout).toMatch(/^notes__write_note\s+deny\s+destructive\s+/m);
    expect(r.stdout).toMatch(/^notes__crash\s+ask\s+destructive\s+/m);
    expect(r.stdout).not.toMatch(/tok-hidden-77|plain-s3cret/);

    const json = JSON.parse((await tether(["tools", "--config", cfg, "--json"], { NOTES_TOKEN: "x" })).stdout);
    expect(json.servers.map((s: { name: string; state: string }) => [s.name, s.state])).toEqual([["notes", "ready"], ["broken", "down"]]);
  });

  it("names an unknown profile", async () => {
    const cfg = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
    writeFileSync(cfg, "{}\n");
    const r = await tether(["tools", "--config", cfg, "--profile", "nope"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown profile "nope"');
  });
});
