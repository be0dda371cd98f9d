/**
 * The README's "Use it from OpenAI clients" section, run as written against a real gateway (only
 * its base URL swapped for the test server's): the openai Node example, the AI SDK example, and
 * the Python one where Python's `openai` package is installed. And the first contact of a new
 * user: an OpenAI model name on the demo gateway is told which models there are.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const README_URL = "http://127.0.0.1:8787/v1";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

/** The fenced code blocks of one README section, in order. */
function readmeBlocks(section: string, lang: string): string[] {
  const text = readFileSync(join(ROOT, "README.md"), "utf8");
  const start = text.indexOf(`## ${section}\n`);
  expect(start).toBeGreaterThanOrEqual(0);
  const end = text.indexOf("\n## ", start + 1);
  const body = text.slice(start, end < 0 ? undefined : end);
  return [...body.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]!);
}

/**
 * Runs an example as a user would: a file of its own, the project's node_modules on the path. (A
 * child process, asynchronously: the gateway it talks to runs in this process.)
 */
function run(command: string, file: string, code: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), "tether-readme-"));
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
  const path = join(dir, file);
  writeFileSync(path, code.replaceAll(README_URL, `${server.url}/v1`));
  const child = spawn(command, [path], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  return new Promise((resolve) =>
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    }),
  );
}

function hasPythonOpenAI(): boolean {
  try {
    execFileSync("python3", ["-c", "import openai"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

describe("README: Use it from OpenAI clients", () => {
  it("the openai Node example runs as written: a reply, then its X-Session-Id continues the conversation", async () => {
    const [nodeExample] = readmeBlocks("Use it from OpenAI clients", "js");
    expect(nodeExample).toContain('from "openai"');
    const r = await run(process.execPath, "example.mjs", nodeExample!);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("1 2 3\n1 2 3 4 5\n");
  });

  it("the function-calling examples run as written: openai, the AI SDK and LangChain each complete the tool loop", async () => {
    const blocks = readmeBlocks("Use it from OpenAI clients", "js").filter((b) => b.includes("get_weather"));
    expect(blocks).toHaveLength(3);
    const expected = ["get_weather returned: sunny\n", "get_weather returned: sunny in Paris\n", "get_weather returned: sunny\n"];
    for (const [i, block] of blocks.entries()) {
      const r = await run(process.execPath, `tools-${i}.mjs`, block);
      expect(r.stderr).toBe("");
      expect(r.stdout).toBe(expected[i]);
    }
  });

  it("the AI SDK example runs as written: chat model and Responses model, streamed", async () => {
    const aiSdk = readmeBlocks("Use it from OpenAI clients", "js").find((b) => b.includes('from "ai"'));
    expect(aiSdk).toBeDefined();
    const r = await run(process.execPath, "example-ai-sdk.mjs", aiSdk!);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("1 2 3\n1 2 3 4 5");
  });

  it.skipIf(!hasPythonOpenAI())("the Python example runs as written (skipped: Python's openai package is not installed here)", async () => {
    const [py] = readmeBlocks("Use it from OpenAI clients", "python");
    const r = await run("python3", "example.py", py!);
    expect(r.stdout).toBe("1 2 3\n1 2 3 4 5\n");
  });

  it("first contact: gpt-4o-mini on the demo gateway is a 404 that names the model to use", async () => {
    const ai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const err = (await ai.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.code).toBe("model_not_found");
    expect(err.message).toContain("Models on this gateway: demo (GET /v1/models)");
    expect(err.headers?.get("x-should-retry")).toBe("false");
    expect((await ai.models.list()).data.map((m) => m.id)).toEqual(["demo"]);
  });
});
