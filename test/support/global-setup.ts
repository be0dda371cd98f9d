/**
 * Runs once before any test file: rebuilds dist/ when a source is newer than the last build, so
 * every test that spawns `tether serve` (bin/tether.js → dist/) runs the code under test, also when
 * vitest is started directly (`npx vitest run FILE`) rather than through `npm test`'s pretest; and
 * compiles the test MCP server that tests spawn (mcp-test-server-build.ts).
 */
import { build } from "../../scripts/build.mjs";
import { buildMcpTestServer } from "./mcp-test-server-build.js";

export default async function setup(): Promise<void> {
  await Promise.all([build({ js: true, types: false }), buildMcpTestServer()]);
}
