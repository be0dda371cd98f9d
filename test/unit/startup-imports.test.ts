/**
 * What `tether serve` loads before it listens, read from the compiled build: the static import
 * graph of dist/cli.js and of the `serve` chunk it imports. Heavy packages that a single SQLite
 * node without MCP servers, peers or traces does not need — PostgreSQL, Redis, OpenTelemetry, the
 * MCP SDK (with its own zod, ajv and cross-spawn: ~250 modules), the A2A SDK, the YAML parser,
 * prom-client, re2js (search_files' engine) — must only be reachable through a dynamic import() or a require() on first use,
 * never statically: each one is tens of milliseconds and megabytes of a start
 * (`npm run bench -- --only=startup`).
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";

const DIST = new URL("../../dist/", import.meta.url).pathname;

/**
 * Static `import … from "x"` / `import "x"` / `export … from "x"` specifiers of a bundled module, and
 * the CommonJS packages it requires when it is evaluated (scripts/build.mjs turns imports of
 * REQUIRED_CJS packages into a top-level `require`: loaded at start all the same).
 */
function staticImports(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s*"([^"]+)"|^\s*import\s*"([^"]+)"/gm)) out.push((m[1] ?? m[2])!);
  for (const m of text.matchAll(/^var \w+ = __createRequire\(import\.meta\.url\)\("([^"]+)"\);$/gm)) out.push(m[1]!);
  return out;
}

function walk(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    for (const spec of staticImports(file)) {
      if (spec.startsWith(".")) visit(join(dirname(file), spec));
      else packages.add(spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!);
    }
  };
  visit(entry);
  return { files, packages };
}

/** The source modules (esbuild's "// src/….ts" marks) in the chunks a start loads statically. */
function startModules(): Set<string> {
  const serveChunk = readdirSync(join(DIST, "chunks")).find((f) => /^serve-.*\.js$/.test(f))!;
  const files = new Set([...walk(join(DIST, "cli.js")).files, ...walk(join(DIST, "chunks", serveChunk)).files]);
  return new Set([...files].flatMap((f) => [...readFileSync(f, "utf8").matchAll(/^\/\/ (src\/\S+\.ts)$/gm)].map((m) => m[1]!)));
}

describe("the start of tether serve (dist/)", () => {
  it("loads no PostgreSQL, Redis, OpenTelemetry, MCP SDK, A2A SDK, YAML, prom-client or re2js module before it listens", () => {
    const serveChunk = readdirSync(join(DIST, "chunks")).find((f) => /^serve-.*\.js$/.test(f));
    expect(serveChunk).toBeDefined();
    const cli = walk(join(DIST, "cli.js"));
    const serve = walk(join(DIST, "chunks", serveChunk!));
    const loaded = new Set([...cli.packages, ...serve.packages]);
    // What it does need, so the walk is known to see the graph:
    for (const needed of ["commander", "better-sqlite3", "ws", "pino"]) expect(loaded).toContain(needed);
    const heavy = [...loaded].filter(
      (p) => ["pg", "ioredis", "yaml", "prom-client", "re2js", "@modelcontextprotocol/sdk", "@a2a-js/sdk"].includes(p) || p.startsWith("@opentelemetry/"),
    );
    expect(heavy).toEqual([]);
  });

  it("loads the HTTP APIs' modules (chat, responses, runs, sessions, AI SDK, A2A) on their first request, not before it listens", () => {
    const serveChunk = readdirSync(join(DIST, "chunks")).find((f) => /^serve-.*\.js$/.test(f))!;
    const files = new Set([...walk(join(DIST, "cli.js")).files, ...walk(join(DIST, "chunks", serveChunk)).files]);
    // esbuild marks where each source module starts in a chunk: "// src/gateway/http/app.ts".
    const modules = new Set([...files].flatMap((f) => [...readFileSync(f, "utf8").matchAll(/^\/\/ (src\/\S+\.ts)$/gm)].map((m) => m[1]!)));
    expect(modules).toContain("src/gateway/http/app.ts");
    const lazy = ["openai-chat", "openai-responses", "runs-api", "sessions-api", "a2a", "chat-messages", "responses-items"].map((n) => `src/gateway/http/${n}.ts`);
    lazy.push("src/gateway/ui/ai-sdk-chat.ts", "src/gateway/ui/ai-sdk-input.ts");
    expect(lazy.filter((m) => modules.has(m))).toEqual([]);
  });

  it("loads the MCP pool and the workspace tools when a profile configures them, not before it listens", () => {
    const modules = startModules();
    expect(modules).toContain("src/agent/tools/mcp/lazy-pool.ts");
    expect(modules).toContain("src/agent/tools/workspace/workspace-source.ts");
    const lazy = ["mcp/mcp-pool", "mcp/server-connection", "mcp/mcp-tool", "mcp/server-config", "mcp/result-text"].map((n) => `src/agent/tools/${n}.ts`);
    for (const n of ["workspace-tools", "terminal-tool", "process-tools", "read-tools", "write-tools", "text-read", "fd-open", "sandbox", "diff", "output-cap"]) {
      lazy.push(`src/agent/tools/workspace/${n}.ts`);
    }
    expect(lazy.filter((m) => modules.has(m))).toEqual([]);
  });

  it("bundles hono and its node adapter into the command (one chunk, not ~30 ES modules resolved and linked at start); the library leaves them to the app's node_modules", () => {
    const serveChunk = readdirSync(join(DIST, "chunks")).find((f) => /^serve-.*\.js$/.test(f))!;
    const command = new Set([...walk(join(DIST, "cli.js")).packages, ...walk(join(DIST, "chunks", serveChunk)).packages]);
    expect([...command].filter((p) => p === "hono" || p === "@hono/node-server")).toEqual([]);
    const library = walk(join(DIST, "index.js")).packages;
    expect([...library].filter((p) => p === "hono" || p === "@hono/node-server").sort()).toEqual(["@hono/node-server", "hono"]);
  });

  it("is pure ASCII: V8 keeps a module with one non-ASCII character (a comment's dash) as two-byte source, twice the heap", () => {
    const files = [join(DIST, "cli.js"), join(DIST, "index.js"), ...readdirSync(join(DIST, "chunks")).filter((f) => f.endsWith(".js")).map((f) => join(DIST, "chunks", f))];
    const wide = files.filter((f) => /[^\x00-\x7f]/.test(readFileSync(f, "utf8")));
    expect(wide).toEqual([]);
  });

  it("bundles only the parts of zod it uses (`import * as z`: the `{ z }` object kept all of zod, twice the source)", () => {
    const text = readdirSync(join(DIST, "chunks"))
      .filter((f) => f.endsWith(".js"))
      .map((f) => readFileSync(join(DIST, "chunks", f), "utf8"))
      .join("\n");
    expect(text).toContain("node_modules/zod/v4/classic/schemas.js");
    // Never used by Tether: JSON Schema to zod, and zod's ahead-of-time compiler.
    expect(text).not.toContain("node_modules/zod/v4/classic/from-json-schema.js");
    expect(text).not.toContain("node_modules/zod/v4/core/compile.js");
  });

  it("keeps zod's message locales out of the bundle (English only)", () => {
    const text = readdirSync(join(DIST, "chunks"))
      .filter((f) => f.endsWith(".js"))
      .map((f) => readFileSync(join(DIST, "chunks", f), "utf8"))
      .join("\n");
    expect(text).toContain("node_modules/zod/v4/locales/en.js");
    expect(text).not.toContain("node_modules/zod/v4/locales/fr.js");
  });
});
