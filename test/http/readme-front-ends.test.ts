/**
 * The README's "Front ends" section, run as written against a real gateway (only its address
 * swapped for the test server's): the AI SDK transport from Node, the AG-UI HttpAgent, and the
 * editor settings' `tether acp` command driven by the ACP SDK's client (`npx tether` is the
 * package's bin: run here from this checkout's build).
 */
import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as acp from "@agentclientprotocol/sdk";
import { agentText, spawnEditor } from "../support/acp-client.js";
import { startTestServer, type TestServer } from "../support/start-server.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const README_ORIGIN = "http://127.0.0.1:8787";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

function readmeBlocks(section: string, lang: string): string[] {
  const text = readFileSync(join(ROOT, "README.md"), "utf8");
  const start = text.indexOf(`## ${section}\n`);
  expect(start).toBeGreaterThanOrEqual(0);
  const end = text.indexOf("\n## ", start + 1);
  return [...text.slice(start, end < 0 ? undefined : end).matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]!);
}

function run(file: string, code: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), "tether-readme-"));
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
  writeFileSync(join(dir, file), code.replaceAll(README_ORIGIN, server.url));
  const child = spawn(process.execPath, [join(dir, file)], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on("close", (status) => resolve({ status, stdout, stderr })));
}

describe("README: Front ends", () => {
  it("the AI SDK transport example and the AG-UI example run as written", async () => {
    const blocks = readmeBlocks("Front ends: useChat, AG-UI, ACP", "js");
    expect(blocks).toHaveLength(2);
    for (const [i, block] of blocks.entries()) {
      const r = await run(`front-end-${i}.mjs`, block);
      expect(r.stderr).toBe("");
      expect(r.stdout).toBe("1 2 3\n");
    }
  });

  it("the ACP editor settings' command answers an editor: a prompt streams its reply", async () => {
    const [settings] = readmeBlocks("Front ends: useChat, AG-UI, ACP", "json");
    const { command, args } = (JSON.parse(settings!) as { agent_servers: Record<string, { command: string; args: string[] }> }).agent_servers["Tether"]!;
    expect([command, ...args.slice(0, 2)]).toEqual(["npx", "tether", "acp"]);
    const editor = await spawnEditor(args.slice(2).map((a) => a.replaceAll(README_ORIGIN, server.url)));
    try {
      await editor.initialize();
      const { sessionId } = await editor.agent.request(acp.methods.agent.session.new, { cwd: tmpdir(), mcpServers: [] });
      const res = await editor.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "count to 3" }] });
      expect(res.stopReason).toBe("end_turn");
      expect(agentText(editor.updates, sessionId)).toBe("1 2 3");
    } finally {
      await editor.close();
    }
  }, 60_000);
});
