/**
 * Real MCP servers for tests: the SDK-built test server (mcp-test-server.ts) as a stdio config or
 * a spawned streamable HTTP process, and the published `@modelcontextprotocol/server-filesystem`
 * run from node_modules (no network).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { McpServerConfig } from "../../src/config/index.js";
import { MCP_TEST_SERVER_JS } from "./mcp-test-server-build.js";

const RUN_TS = fileURLToPath(new URL("../../bin/run-ts.js", import.meta.url));
const SERVER_BIN = fileURLToPath(new URL("./mcp-test-server-bin.ts", import.meta.url));
const REPO = fileURLToPath(new URL("../..", import.meta.url));

/** How to start the test server: its compiled build (global setup), else its source through tsx. */
function serverArgs(): string[] {
  return existsSync(MCP_TEST_SERVER_JS) ? [MCP_TEST_SERVER_JS] : [RUN_TS, SERVER_BIN];
}

/** A fresh file the test server appends one JSON line to per call (see MCP_TEST_LOG). */
export function tempLog(): string {
  const path = join(mkdtempSync(join(tmpdir(), "tether-mcp-")), "calls.jsonl");
  writeFileSync(path, "");
  return path;
}

export function readLog(path: string): Array<Record<string, any>> {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l));
}

/** The test server over stdio, as `mcp_servers.NAME` config. */
export function stdioTestServer(env: Record<string, string> = {}): McpServerConfig {
  return { command: process.execPath, args: serverArgs(), env, cwd: REPO };
}

/** The published filesystem server over stdio, allowed to read and write `dir`. */
export function filesystemServer(dir: string): McpServerConfig {
  const require = createRequire(import.meta.url);
  const pkg = require.resolve("@modelcontextprotocol/server-filesystem/package.json");
  return { command: process.execPath, args: [join(dirname(pkg), "dist", "index.js"), dir] };
}

export interface SpawnedMcpHttp {
  url: string;
  child: ChildProcess;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** The test server over streamable HTTP, in a process of its own (so a test can kill it). */
export async function spawnHttpTestServer(env: Record<string, string> = {}): Promise<SpawnedMcpHttp> {
  const child = spawn(process.execPath, [...serverArgs(), "--http"], {
    cwd: REPO,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /listening (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    void exited.then(() => reject(new Error(`MCP test server exited before listening: ${stderr}`)));
  });
  return {
    url,
    child,
    async kill(signal = "SIGKILL") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** Polls `check` until it is truthy (a real server's notification has no other handle). */
export async function eventually<T>(check: () => T | Promise<T>, timeoutMs = 10_000, what = "condition"): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
