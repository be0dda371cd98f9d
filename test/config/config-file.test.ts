/** The YAML config file: layering, provenance, errors with lines, the starter file, show, reload. */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigSchema, loadConfig, renderConfig, STARTER_CONFIG } from "../../src/config/index.js";
import { recordValueOf, shapeOf, toSchemaKeys, type UnknownKey } from "../../src/config/schema-keys.js";
import type { z } from "zod";

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

/** A mapping with every key the schema declares, all the way down (records get one entry named `x`). */
function everyKey(schema: z.ZodType, depth = 0): Record<string, unknown> | null {
  const shape = shapeOf(schema);
  const value = recordValueOf(schema);
  if (depth > 8) return null;
  if (shape) return Object.fromEntries(Object.entries(shape).map(([k, v]) => [k === "dbPath" ? "db" : k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), everyKey(v, depth + 1)]));
  if (value) return { x: everyKey(value, depth + 1) };
  return null;
}

describe("strict config", () => {
  it("refuses an unknown key with its file line and the key it was probably meant to be", () => {
    const typo = tempConfig("port: 9000\nretension:\n  ended_after_days: 30\n");
    expect(() => loadConfig({ env: {}, configPath: typo })).toThrow(`${typo}:2: unknown key retension (did you mean retention?)`);
    const nested = tempConfig("lifecycle:\n  orphan_grace_s: 5\n  stale_turns_s: 30\n");
    expect(() => loadConfig({ env: {}, configPath: nested })).toThrow(`${nested}:3: unknown key lifecycle.stale_turns_s (did you mean lifecycle.stale_turn_s?)`);
    // Under a record (a profile, an MCP server): the keys of the record's values.
    const profile = tempConfig("profiles:\n  work:\n    default_modle: gpt-4o\nmcp_servers:\n  f:\n    command: x\n    agrs: [a]\n");
    expect(() => loadConfig({ env: {}, configPath: profile })).toThrow(
      `${profile}:3: unknown key profiles.work.default_modle (did you mean profiles.work.default_model?)\n${profile}:7: unknown key mcp_servers.f.agrs (did you mean mcp_servers.f.args?)`,
    );
    // Nothing near: the keys that are known there.
    const far = tempConfig("retry:\n  banana: 1\n");
    expect(() => loadConfig({ env: {}, configPath: far })).toThrow(`${far}:2: unknown key retry.banana (known keys of retry: max_retries, base_delay_ms)`);
  });

  it("knows every key the schemas declare, in either spelling (a key added to a schema is known at once)", () => {
    const unknown: UnknownKey[] = [];
    toSchemaKeys(everyKey(ConfigSchema), ConfigSchema, new Map(), [], [], unknown);
    expect(unknown).toEqual([]);
    const path = tempConfig("ws_only: false\nwsOnly: false\ndb: ./a.db\nlimits: { maxFrameBytes: 2048, ring_frames: 64 }\n");
    expect(loadConfig({ env: {}, configPath: path }).config.limits).toMatchObject({ maxFrameBytes: 2048, ringFrames: 64 });
  });
});

describe("config of MCP servers and tools", () => {
  it("reads mcp_servers and tools (top level and per profile) with env and header keys as written", () => {
    const path = tempConfig(
      [
        "mcp_servers:",
        "  files:",
        "    command: npx",
        '    args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/project"]',
        "    env: { LOG_LEVEL: warn, PORT: 8080 }",
        "  search:",
        "    url: https://mcp.example.com/mcp",
        '    headers: { Authorization: "Bearer ${SEARCH_TOKEN}" }',
        "tools:",
        "  timeout_s: 60",
        '  policy: { "files__read_*": auto, "files__write_file": ask }',
        "profiles:",
        "  work:",
        "    mcp_servers: {}",
        "    tools: { policy: { \"files__*\": deny } }",
        "",
      ].join("\n"),
    );
    const { config } = loadConfig({ env: {}, configPath: path });
    expect(config.mcp_servers.files).toEqual({ command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/project"], env: { LOG_LEVEL: "warn", PORT: "8080" } });
    expect(config.mcp_servers.search).toEqual({ url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer ${SEARCH_TOKEN}" } });
    expect(config.tools).toEqual({ timeout_s: 60, connect_timeout_s: 15, max_result_bytes: 1048576, approval_timeout_s: 0, policy: { "files__read_*": "auto", "files__write_file": "ask" }, workspace: false, workspace_roots: [], bwrap: "bwrap" });
    expect(config.profiles.work).toEqual({ mcp_servers: {}, tools: { policy: { "files__*": "deny" } } });
  });

  it("refuses a bad server by file line: both or neither of command/url, a name with __, an unknown policy", () => {
    const both = tempConfig("mcp_servers:\n  x:\n    command: a\n    url: http://b\n");
    expect(() => loadConfig({ env: {}, configPath: both })).toThrow(new RegExp(`${both}:2 \\(key mcp_servers\\.x\\).*exactly one of`));
    const dunder = tempConfig("mcp_servers:\n  my__srv:\n    command: a\n");
    expect(() => loadConfig({ env: {}, configPath: dunder })).toThrow(/must not contain '__'/);
    const wrongKey = tempConfig("mcp_servers:\n  x:\n    command: a\n    headers: { A: b }\n");
    expect(() => loadConfig({ env: {}, configPath: wrongKey })).toThrow(/`headers` does not apply to a stdio server/);
    const policy = tempConfig("tools:\n  policy:\n    a: maybe\n");
    expect(() => loadConfig({ env: {}, configPath: policy })).toThrow(new RegExp(`${policy}:3 \\(key tools\\.policy\\.a\\)`));
  });

  it("config show masks every env and header value of an MCP server, and keeps their names as written", () => {
    const path = tempConfig(
      "mcp_servers:\n  files:\n    command: npx\n    env: { API_TOKEN: literal-s3cret }\n  search:\n    url: https://mcp.example.com/mcp\n    headers: { Authorization: \"Bearer ${SEARCH_TOKEN}\" }\nprofiles:\n  work:\n    mcp_servers:\n      w:\n        url: http://127.0.0.1:1/mcp\n        headers: { X-Key: other-s3cret }\n",
    );
    const text = renderConfig(loadConfig({ env: {}, configPath: path }));
    expect(text).not.toMatch(/literal-s3cret|other-s3cret|SEARCH_TOKEN/);
    expect(text).toMatch(/^mcp_servers\.files\.env\.API_TOKEN\s+"•••• \(set\)"\s+\(file\)$/m);
    expect(text).toMatch(/^mcp_servers\.search\.headers\.Authorization\s+"•••• \(set\)"\s+\(file\)$/m);
    expect(text).toMatch(/^profiles\.work\.mcp_servers\.w\.headers\.X-Key\s+"•••• \(set\)"\s+\(file\)$/m);
    expect(text).toMatch(/^mcp_servers\.files\.command\s+"npx"\s+\(file\)$/m);
    expect(text).toMatch(/^tools\.timeout_s\s+120\s+\(default\)$/m);
  });
});
