/** The YAML config file: layering, provenance, errors with lines, the starter file, show, reload. */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig, renderConfig, STARTER_CONFIG } from "../../src/config/index.js";

function tempConfig(text?: string): string {
  const path = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
  if (text !== undefined) writeFileSync(path, text);
  return path;
}

describe("config file", () => {
  it("writes a commented starter file on first run, which loads as all defaults", () => {
    const path = tempConfig();
    const loaded = loadConfig({ env: {}, configPath: path, createIfMissing: true });
    expect(loaded.created).toBe(true);
    expect(readFileSync(path, "utf8")).toBe(STARTER_CONFIG);
    expect(loaded.config.port).toBe(8787);
    expect(loaded.sourceOf("port")).toBe("default");
    expect(loadConfig({ env: {}, configPath: path, createIfMissing: true }).created).toBe(false);
  });

  it("layers defaults < file < env < flags and says where each value came from", () => {
    const path = tempConfig("port: 9000\ndb: /tmp/x.db\nlifecycle:\n  orphan_grace_s: 50\n  stale_turn_s: 30\nlimits:\n  max_iterations: 3\n");
    const loaded = loadConfig({
      env: { TETHER_ORPHAN_GRACE_S: "5" },
      flags: { port: 1234 },
      configPath: path,
    });
    expect(loaded.config.port).toBe(1234);
    expect(loaded.config.dbPath).toBe("/tmp/x.db");
    expect(loaded.config.lifecycle).toMatchObject({ orphan_grace_s: 5, stale_turn_s: 30, session_ttl_s: 21_600 });
    expect(loaded.config.limits.maxIterations).toBe(3);
    expect(loaded.sourceOf("port")).toBe("flag");
    expect(loaded.sourceOf("dbPath")).toBe("file");
    expect(loaded.sourceOf("lifecycle.orphan_grace_s")).toBe("env");
    expect(loaded.sourceOf("lifecycle.stale_turn_s")).toBe("file");
    expect(loaded.sourceOf("lifecycle.session_ttl_s")).toBe("default");
  });

  it("names the key and the file line of an invalid value", () => {
    const path = tempConfig("port: 8787\nlifecycle:\n  orphan_grace_s: soon\n");
    expect(() => loadConfig({ env: {}, configPath: path })).toThrow(new RegExp(`${path}:3 \\(key lifecycle\\.orphan_grace_s\\)`));
    const bad = tempConfig("port: [1\n");
    expect(() => loadConfig({ env: {}, configPath: bad })).toThrow(/invalid YAML/);
    const typo = tempConfig("providers:\n  local:\n    base_url: not a url\n");
    expect(() => loadConfig({ env: {}, configPath: typo })).toThrow(new RegExp(`${typo}:3 \\(key providers\\.local\\.base_url\\)`));
  });

  it("a key removed from the file returns to its default on the next load, not to its last value", () => {
    const path = tempConfig("lifecycle:\n  orphan_grace_s: 5\n");
    expect(loadConfig({ env: {}, configPath: path }).config.lifecycle.orphan_grace_s).toBe(5);
    writeFileSync(path, "# nothing set\n");
    expect(loadConfig({ env: {}, configPath: path }).config.lifecycle.orphan_grace_s).toBe(20);
  });

  it("config show prints file-spelled keys with sources and masks secrets", () => {
    const path = tempConfig("api_key: sk-very-secret\nproviders:\n  local:\n    base_url: http://127.0.0.1:1/v1\n    api_key_env: LOCAL_KEY\n");
    const text = renderConfig(
      loadConfig({ env: { TETHER_PROVIDER_KEY: "pk-secret", TETHER_API_KEYS: "alice:ak-secret" }, configPath: path }),
    );
    expect(text).not.toMatch(/sk-very-secret|pk-secret|ak-secret/);
    expect(text).toMatch(/^api_key\s+"•••• \(set\)"\s+\(file\)$/m);
    expect(text).toMatch(/^provider\.api_key\s+"•••• \(set\)"\s+\(env\)$/m);
    expect(text).toMatch(/^auth\.keys\.…\s+"•••• → alice"\s+\(env\)$/m);
    expect(text).toMatch(/^providers\.local\.base_url\s+"http:\/\/127\.0\.0\.1:1\/v1"\s+\(file\)$/m);
    expect(text).toMatch(/^providers\.local\.api_key_env\s+"LOCAL_KEY"\s+\(file\)$/m);
    expect(text).toMatch(/^lifecycle\.orphan_grace_s\s+20\s+\(default\)$/m);
    expect(text).toMatch(/^ws_only\s+false\s+\(default\)$/m);
  });
});
