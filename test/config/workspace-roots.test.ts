/**
 * `tools.workspace` in the config: both spellings (`{ roots }` and the older `true` +
 * `workspace_roots`) resolve to the same settings, a profile overrides key by key, and the roots
 * an operator may never use are refused when the config is loaded — `/`, `/proc`, `/sys`, `/dev`
 * (and below), the gateway's data and config folders and their parents, a symlink to any of them.
 */
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig, resolveConfig, toolsConfigFor, type ConfigInput } from "../../src/config/index.js";

const base = realpathSync(mkdtempSync(join(tmpdir(), "tether-roots-")));
const project = join(base, "project");
mkdirSync(project);
const dataDir = join(base, "data");
const db = join(dataDir, "tether.db");

const resolve = (over: Record<string, unknown>) => resolveConfig({}, { dbPath: db, home: join(base, "home"), ...over } as ConfigInput);
const workspaceOf = (tools: Record<string, unknown>, profiles?: Record<string, unknown>) =>
  toolsConfigFor(resolve({ tools, ...(profiles ? { profiles } : {}) }), profiles ? Object.keys(profiles)[0]! : "default").workspace;

describe("tools.workspace settings", () => {
  it("{ roots } and the older `true` + workspace_roots resolve the same; off is null", () => {
    const expected = { roots: [project], sandbox: "bwrap", network: false, env: [], max_processes: 8, bwrap: "bwrap" };
    expect(workspaceOf({ workspace: { roots: [project] } })).toEqual(expected);
    expect(workspaceOf({ workspace: true, workspace_roots: [project] })).toEqual(expected);
    expect(workspaceOf({ workspace: true })).toEqual({ ...expected, roots: [] });
    expect(workspaceOf({})).toBeNull();
    expect(workspaceOf({ workspace: false, workspace_roots: [project] })).toBeNull();
    // Both spellings at once: the roots add up.
    expect(workspaceOf({ workspace: { roots: [project] }, workspace_roots: [dataDir + "-x"] })!.roots).toEqual([project, dataDir + "-x"]);
    expect(workspaceOf({ workspace: { roots: ["~/code"] } })!.roots).toEqual([join(homedir(), "code")]);
  });

  it("a profile's workspace overrides the top level's key by key", () => {
    const top = { workspace: { roots: [project], network: true, env: ["NPM_CONFIG_REGISTRY"] } };
    expect(workspaceOf(top, { dev: { tools: { workspace: { sandbox: "none" } } } })).toEqual({
      roots: [project],
      sandbox: "none",
      network: true,
      env: ["NPM_CONFIG_REGISTRY"],
      max_processes: 8,
      bwrap: "bwrap",
    });
    expect(workspaceOf(top, { dev: { tools: { workspace: false } } })).toBeNull();
    expect(workspaceOf(top, { dev: { tools: { workspace_roots: [base + "/other"] } } })!.roots).toEqual([base + "/other"]);
  });

  it("refuses an unknown key of the object by name", () => {
    expect(() => resolve({ tools: { workspace: { roots: [project], network_mode: "host" } } })).toThrow(/network_mode/);
  });
});

describe("roots the operator may not use are refused at load", () => {
  it.each([
    ["/", /file system's root/],
    ["/proc", /\/proc cannot be/],
    ["/proc/self", /\/proc cannot be/],
    ["/sys", /\/sys cannot be/],
    ["/dev/shm", /\/dev cannot be/],
    ["relative/path", /absolute path/],
  ])("%s", (root, why) => {
    expect(() => resolve({ tools: { workspace: { roots: [root] } } })).toThrow(why);
    expect(() => resolve({ tools: { workspace: true, workspace_roots: [root] } })).toThrow(/tools\.workspace_roots/);
    expect(() => resolve({ profiles: { dev: { tools: { workspace: { roots: [root] } } } } })).toThrow(/profiles\.dev\.tools\.workspace\.roots/);
  });

  it("the data folder, a parent of it, the home of the profile stores, a profile's store folder", () => {
    for (const root of [dataDir, base, join(base, "home")]) {
      expect(() => resolve({ tools: { workspace: { roots: [root] } } }), root).toThrow(/holds the gateway's own/);
    }
    const profileDb = join(base, "pdata", "p.db");
    expect(() => resolve({ profiles: { p: { db: profileDb } }, tools: { workspace: { roots: [join(base, "pdata")] } } })).toThrow(/holds the gateway's own/);
    // A folder beside them is fine.
    expect(() => resolve({ tools: { workspace: { roots: [project] } } })).not.toThrow();
  });

  it("a symlink to a forbidden folder is judged by where it points", () => {
    const link = join(base, "root-link");
    symlinkSync("/", link);
    expect(() => resolve({ tools: { workspace: { roots: [link] } } })).toThrow(/root cannot be a workspace root \(it resolves to \/\)/);
    const toData = join(base, "data-link");
    mkdirSync(dataDir, { recursive: true });
    symlinkSync(dataDir, toData);
    expect(() => resolve({ tools: { workspace: { roots: [toData] } } })).toThrow(/holds the gateway's own/);
  });

  it("the config file's folder, as loaded from it", () => {
    const dir = join(base, "cfg");
    mkdirSync(dir);
    const path = join(dir, "config.yaml");
    writeFileSync(path, `home: ${join(base, "elsewhere")}\ndb: ${db}\ntools:\n  workspace:\n    roots: ["${dir}"]\n`);
    expect(() => loadConfig({ env: {}, configPath: path })).toThrow(new RegExp(`refusing workspace root "${dir}" at tools.workspace.roots: it holds the gateway's own`));
    writeFileSync(path, `home: ${join(base, "elsewhere")}\ndb: ${db}\ntools:\n  workspace:\n    roots: ["${project}"]\n`);
    expect(toolsConfigFor(loadConfig({ env: {}, configPath: path }).config, "default").workspace!.roots).toEqual([project]);
  });
});
