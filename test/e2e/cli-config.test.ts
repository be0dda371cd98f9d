/** `tether config show` and `tether models`, run as users run them. */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const BIN = fileURLToPath(new URL("../../bin/tether.js", import.meta.url));

function tether(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, encoding: "utf8" });
}

const cfg = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
writeFileSync(
  cfg,
  [
    "providers:",
    "  local:",
    "    base_url: http://127.0.0.1:11434/v1",
    "    models: [llama3.1, qwen]",
    "default_provider: local",
    "lifecycle:",
    "  orphan_grace_s: 45",
    "",
  ].join("\n"),
);

describe("tether config show / models", () => {
  it("shows the effective config with sources, secrets masked", () => {
    const r = tether(["config", "show", "--config", cfg], { TETHER_API_KEY: "sekrit-123", TETHER_PORT: "9999" });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`# effective config (file: ${cfg})`);
    expect(r.stdout).toMatch(/^lifecycle\.orphan_grace_s\s+45\s+\(file\)$/m);
    expect(r.stdout).toMatch(/^port\s+9999\s+\(env\)$/m);
    expect(r.stdout).toMatch(/^api_key\s+"•••• \(set\)"\s+\(env\)$/m);
    expect(r.stdout).not.toContain("sekrit-123");
  });

  it("lists routable models with the default marked", () => {
    const r = tether(["models", "--config", cfg]);
    expect(r.status).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^PROVIDER\s+MODEL\s+BASE URL/);
    expect(lines).toContainEqual(expect.stringMatching(/^local\s+llama3\.1\s+http:\/\/127\.0\.0\.1:11434\/v1\s+default$/));
    expect(lines).toContainEqual(expect.stringMatching(/^local\s+qwen\s+http/));
    expect(lines).toContainEqual(expect.stringMatching(/^demo\s+demo\s+\(built-in, offline\)$/));
  });

  it("prints no [object Object]: an empty auth.keys shows as none configured", () => {
    const r = tether(["config", "show", "--config", cfg]);
    expect(r.status).toBe(0);
    expect(r.stdout).not.toContain("[object Object]");
    expect(r.stdout).toMatch(/^auth\.keys\s+"\(none configured\)"\s+\(default\)$/m);
  });

  it("names a TETHER_PROVIDER_URL provider for what it is, not always openai", () => {
    const empty = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
    writeFileSync(empty, "# nothing\n");
    const row = (url: string) => {
      const r = tether(["models", "--config", empty], { TETHER_PROVIDER_URL: url, TETHER_MODEL: "m1" });
      expect(r.status).toBe(0);
      return r.stdout.split("\n").find((l) => l.includes(url))!;
    };
    expect(row("http://127.0.0.1:11434/v1")).toMatch(/^local\s+m1\s+http:\/\/127\.0\.0\.1:11434\/v1\s+default$/);
    expect(row("https://openrouter.ai/api/v1")).toMatch(/^openrouter\s+m1\s/);
    expect(row("https://api.openai.com/v1")).toMatch(/^openai\s+m1\s/);
  });

  it("fails with the file line on an invalid value", () => {
    const bad = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
    writeFileSync(bad, "port: 8787\nlifecycle:\n  stale_turn_s: -1\n");
    const r = tether(["config", "show", "--config", bad]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`${bad}:3 (key lifecycle.stale_turn_s)`);
  });
});
