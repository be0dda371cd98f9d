/** Entry point of the test MCP server as a process (see mcp-test-server.ts): stdio, or `--http`. */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createTestMcpServer, startTestMcpHttp } from "./mcp-test-server.js";

if (process.argv.includes("--http")) {
  const { url } = await startTestMcpHttp(Number(process.env.MCP_TEST_PORT ?? 0));
  process.stdout.write(`listening ${url}\n`);
} else {
  await createTestMcpServer().connect(new StdioServerTransport());
}
