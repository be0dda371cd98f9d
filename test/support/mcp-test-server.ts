/**
 * A small real MCP server for the tests, built with the SDK's `McpServer` (no protocol code of
 * ours). Run it as a process:
 *
 *   node bin/run-ts.js test/support/mcp-test-server-bin.ts            # stdio
 *   node bin/run-ts.js test/support/mcp-test-server-bin.ts --http     # streamable HTTP; prints "listening URL"
 *
 * or in-process over HTTP with `startTestMcpHttp()`.
 *
 * Tools (fixed): `echo` and `read_note` (readOnlyHint), `write_note` (destructiveHint), `slow`
 * (readOnly; sleeps, honours cancellation), `slow_write` (destructive, not idempotent, sleeps), `fail` (isError), `media` (image, resource and link
 * content), `ask_user` (elicitation), `add_tool` (registers a tool: list_changed), `show_token`
 * (echoes env MCP_TEST_TOKEN, to prove redaction), `crash` (the process exits mid-call), `huge`
 * (an answer of `bytes` bytes: text of `x`s, of NULs, or structured content, to prove the caps).
 *
 * Env: MCP_TEST_LOG — a file that gets one JSON line per call and per cancellation (tests count
 * executions across processes); MCP_TEST_EXPECT_AUTH — over HTTP, the `Authorization` header
 * every request must carry (else 401).
 */
import { randomUUID } from "node:crypto";
import { appendFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const LOG = process.env.MCP_TEST_LOG;
/** A 1×1 transparent PNG. */
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

function record(entry: Record<string, unknown>): void {
  if (LOG) appendFileSync(LOG, `${JSON.stringify({ pid: process.pid, ...entry })}\n`);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      reject(signal.reason ?? new Error("cancelled"));
    }, { once: true });
  });
}

const notes = new Map<string, string>([["greeting", "hello"]]);

export function createTestMcpServer(): McpServer {
  const server = new McpServer({ name: "tether-test-server", version: "1.0.0" });

  server.registerTool(
    "echo",
    { description: "Echo the text back.", inputSchema: { text: z.string() }, annotations: { readOnlyHint: true, idempotentHint: true } },
    async ({ text }) => {
      record({ tool: "echo", text });
      return { content: [{ type: "text", text }] };
    },
  );

  server.registerTool(
    "read_note",
    { description: "Read a note by key.", inputSchema: { key: z.string() }, annotations: { readOnlyHint: true } },
    async ({ key }) => {
      record({ tool: "read_note", key });
      const value = notes.get(key) ?? null;
      return { content: [{ type: "text", text: `note ${key}: ${value ?? "(none)"}` }], structuredContent: { key, value } };
    },
  );

  server.registerTool(
    "write_note",
    { description: "Write a note (changes state).", inputSchema: { key: z.string(), value: z.string() }, annotations: { destructiveHint: true } },
    async ({ key, value }) => {
      record({ tool: "write_note", key, value });
      notes.set(key, value);
      return { content: [{ type: "text", text: `wrote ${key}` }] };
    },
  );

  server.registerTool(
    "slow",
    { description: "Sleep for ms milliseconds.", inputSchema: { ms: z.number() }, annotations: { readOnlyHint: true } },
    async ({ ms }, extra) => {
      record({ tool: "slow", ms, event: "start" });
      try {
        await sleep(ms, extra.signal);
      } catch (err) {
        record({ tool: "slow", event: "cancelled", reason: String(err) });
        throw err;
      }
      record({ tool: "slow", event: "done" });
      return { content: [{ type: "text", text: `slept ${ms} ms` }] };
    },
  );

  server.registerTool(
    "slow_write",
    { description: "Writes a note slowly (changes state; not idempotent).", inputSchema: { key: z.string(), ms: z.number() }, annotations: { destructiveHint: true, idempotentHint: false } },
    async ({ key, ms }, extra) => {
      record({ tool: "slow_write", key, event: "start" });
      await sleep(ms, extra.signal);
      notes.set(key, "slow");
      record({ tool: "slow_write", key, event: "done" });
      return { content: [{ type: "text", text: `slowly wrote ${key}` }] };
    },
  );

  server.registerTool(
    "fail",
    { description: "Always fails.", inputSchema: { message: z.string().optional() }, annotations: { readOnlyHint: true } },
    async ({ message }) => {
      record({ tool: "fail" });
      return { isError: true, content: [{ type: "text", text: message ?? "it failed on purpose" }] };
    },
  );

  server.registerTool(
    "media",
    { description: "Returns an image, a resource and a link.", annotations: { readOnlyHint: true } },
    async () => ({
      content: [
        { type: "text", text: "here is a picture" },
        { type: "image", data: PNG, mimeType: "image/png" },
        { type: "resource", resource: { uri: "note://greeting", mimeType: "text/plain", text: "hello" } },
        { type: "resource_link", uri: "file:///srv/report.pdf", name: "report", mimeType: "application/pdf" },
      ],
    }),
  );

  server.registerTool(
    "ask_user",
    { description: "Asks the user a question (MCP elicitation).", inputSchema: { question: z.string() }, annotations: { readOnlyHint: true } },
    async ({ question }) => {
      record({ tool: "ask_user", question });
      const answer = await server.server.elicitInput({
        mode: "form",
        message: question,
        requestedSchema: { type: "object", properties: { answer: { type: "string", title: "Answer" } }, required: ["answer"] },
      });
      const text = answer.action === "accept" ? `the user answered: ${String(answer.content?.answer)}` : `the user chose ${answer.action}`;
      return { content: [{ type: "text", text }] };
    },
  );

  server.registerTool(
    "add_tool",
    { description: "Registers a new tool (the client gets list_changed).", inputSchema: { name: z.string() }, annotations: { readOnlyHint: true } },
    async ({ name }) => {
      server.registerTool(name, { description: `Added at run time: ${name}.`, annotations: { readOnlyHint: true } }, async () => ({
        content: [{ type: "text", text: `hello from ${name}` }],
      }));
      return { content: [{ type: "text", text: `added ${name}` }] };
    },
  );

  server.registerTool(
    "show_token",
    { description: "Shows the token the server was started with.", annotations: { readOnlyHint: true } },
    async () => ({ content: [{ type: "text", text: `my token is ${process.env.MCP_TEST_TOKEN ?? "(none)"}` }] }),
  );

  server.registerTool(
    "huge",
    {
      description: "Answers with `bytes` bytes: text of x (default), of NUL characters, or structured content.",
      inputSchema: { bytes: z.number().int().min(0), fill: z.enum(["x", "nul", "structured"]).optional() },
      annotations: { readOnlyHint: true },
    },
    async ({ bytes, fill }) => {
      record({ tool: "huge", bytes, fill });
      if (fill === "structured") return { content: [{ type: "text", text: `structured, ${bytes} bytes` }], structuredContent: { data: "s".repeat(bytes) } };
      return { content: [{ type: "text", text: (fill === "nul" ? "\0" : "x").repeat(bytes) }] };
    },
  );

  server.registerTool(
    "crash",
    { description: "The server process exits in the middle of the call.", annotations: { destructiveHint: true } },
    async () => {
      record({ tool: "crash" });
      setTimeout(() => process.exit(3), 10);
      return new Promise(() => undefined);
    },
  );

  return server;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

/** Streamable HTTP on 127.0.0.1 (stateful: one McpServer per MCP session, as the SDK's examples do). */
export async function startTestMcpHttp(port = 0, expectAuth = process.env.MCP_TEST_EXPECT_AUTH): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer((req, res) => {
    void (async () => {
      if (expectAuth !== undefined && req.headers.authorization !== expectAuth) {
        res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: "unauthorized" }));
        return;
      }
      const sid = req.headers["mcp-session-id"] as string | undefined;
      const body = req.method === "POST" ? await readJson(req) : undefined;
      let transport = sid ? sessions.get(sid) : undefined;
      if (!transport) {
        if (sid || req.method !== "POST" || !isInitializeRequest(body)) {
          res.writeHead(sid ? 404 : 400, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "no session" }, id: null }));
          return;
        }
        const created = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => void sessions.set(id, created),
        });
        created.onclose = () => {
          if (created.sessionId) sessions.delete(created.sessionId);
        };
        await createTestMcpServer().connect(created);
        transport = created;
      }
      await transport.handleRequest(req, res, body);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  await new Promise<void>((resolve) => http.listen(port, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  return {
    url,
    server: http,
    async close() {
      for (const t of sessions.values()) await t.close().catch(() => undefined);
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
