/**
 * The test MCP server (mcp-test-server-bin.ts) compiled once per run by the global setup, so each
 * spawn is a plain `node FILE.mjs` rather than tsx compiling TypeScript in every new process (about
 * half a second of CPU per spawn, and a suite spawns it many times). The bundle lives inside this
 * checkout's node_modules/.cache, so its packages (the MCP SDK, zod) resolve from this checkout's
 * node_modules by Node's own lookup. mcp-fixture.ts falls back to tsx when the file is missing.
 */
import { mkdirSync, renameSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("../..", import.meta.url));

/** Where the global setup writes the compiled server. */
export const MCP_TEST_SERVER_JS = join(REPO, "node_modules", ".cache", "tether-tests", "mcp-test-server.mjs");

/** Bundles the server's own code (packages stay imports), written aside and renamed into place. */
export async function buildMcpTestServer(): Promise<void> {
  const esbuild = await import("esbuild");
  mkdirSync(dirname(MCP_TEST_SERVER_JS), { recursive: true });
  const work = `${MCP_TEST_SERVER_JS}.${process.pid}.tmp`;
  await esbuild.build({
    entryPoints: [join(REPO, "test", "support", "mcp-test-server-bin.ts")],
    outfile: work,
    bundle: true,
    packages: "external",
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
  });
  renameSync(work, MCP_TEST_SERVER_JS);
}
