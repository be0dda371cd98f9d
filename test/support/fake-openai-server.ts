/**
 * A real HTTP server on 127.0.0.1 (port 0) that speaks the OpenAI streaming Chat Completions
 * protocol, for tests that must not mock the provider. Each POST /v1/chat/completions takes the
 * next scripted reply from a queue; every request body is recorded.
 *
 *   const ai = await startFakeOpenAI();
 *   ai.script(reply.text(["Hel", "lo"], { usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }));
 *   ai.script(reply.toolCalls([{ id: "call_1", name: "todo", arguments: '{"items":[]}' }], { fragments: 3 }));
 *   ai.script(reply.httpError(429, "Rate limit reached"));
 *   const provider = new OpenAIProvider({ name: "fake", baseUrl: ai.url, defaultModel: "m" });
 *   …
 *   expect(ai.requests[0]!.body.messages).toEqual(…);
 *   await ai.close();
 *
 * A request with an empty queue gets HTTP 500 with an error envelope naming the problem, so a
 * test that scripted too few replies fails loudly instead of hanging.
 *
 * Replies are either an HTTP error (status + OpenAI error envelope) or a stream: a list of steps
 * written as SSE `data:` lines. Builders in `reply` cover the usual shapes; `reply.stream(steps)`
 * composes anything else (slow streams, drops, in-stream errors, raw bytes, a `wait` the test
 * releases).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface FakeUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface FakeToolCall {
  id: string;
  name: string;
  /** JSON text of the arguments, as a model would produce it. */
  arguments: string;
}

/** One step of a scripted stream. */
export type StreamStep =
  /** A chunk whose `choices[0].delta` is this object (content, reasoning_content, tool_calls…). */
  | { type: "delta"; delta: Record<string, unknown> }
  /** A chunk with an empty delta and this finish_reason. */
  | { type: "finish"; reason: string }
  /** The usage chunk (`choices: []`), as sent with `stream_options.include_usage`. */
  | { type: "usage"; usage: FakeUsage }
  /** An `{ error: {…} }` object inside the stream, as some servers send on mid-stream failures. */
  | { type: "error"; message: string; code?: string; errorType?: string }
  /** `data: <data>` verbatim, e.g. `{not json`. */
  | { type: "raw"; data: string }
  /** Waits before the next step. */
  | { type: "delay"; ms: number }
  /**
   * Holds the stream here until `until` settles: a test decides when the model goes on (no
   * timing). `reached` is called when the stream gets here (the request is being answered).
   */
  | { type: "wait"; until: Promise<unknown>; reached?: () => void }
  /** Destroys the socket: the stream stops mid-way, without `[DONE]`. */
  | { type: "drop" }
  /** `data: [DONE]` and the end of the response. */
  | { type: "done" };

export type ScriptedReply =
  | { kind: "http_error"; status: number; body: unknown; headers?: Record<string, string> }
  | {
      kind: "stream";
      steps: StreamStep[];
      /** Pause before every `delta` step (a slow model). */
      chunkDelayMs?: number;
    };

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  /** The parsed JSON body (undefined when the body was not JSON). */
  body: any;
}

export interface FakeOpenAI {
  /** Base URL including `/v1`, e.g. `http://127.0.0.1:53117/v1`. */
  url: string;
  /** Queues replies for the next requests, in order. */
  script(...replies: ScriptedReply[]): void;
  /** Chat completion requests received so far, in order. */
  requests: RecordedRequest[];
  /** Replies scripted but not used yet. */
  readonly pending: number;
  /** TCP connections accepted so far (a client with a keep-alive pool opens one for many calls). */
  readonly connections: number;
  /** Destroys every open connection, as a server whose keep-alive timeout ran out would close them. */
  dropConnections(): void;
  close(): Promise<void>;
}

interface TextOptions {
  delayMs?: number;
  usage?: FakeUsage;
  reasoning?: string[];
  finishReason?: string;
}

/** Builders for the usual replies. */
export const reply = {
  /** Streams the chunks as content deltas, then finish "stop", usage (if given) and [DONE]. */
  text(chunks: string[], opts: TextOptions = {}): ScriptedReply {
    const steps: StreamStep[] = [{ type: "delta", delta: { role: "assistant", content: "" } }];
    for (const r of opts.reasoning ?? []) steps.push({ type: "delta", delta: { reasoning_content: r } });
    for (const c of chunks) steps.push({ type: "delta", delta: { content: c } });
    steps.push({ type: "finish", reason: opts.finishReason ?? "stop" });
    if (opts.usage) steps.push({ type: "usage", usage: opts.usage });
    steps.push({ type: "done" });
    return withDelay({ kind: "stream", steps }, opts.delayMs);
  },

  /**
   * Streams tool calls the way OpenAI does: a first fragment with id and name, then the arguments
   * split into `fragments` pieces, all keyed by `index`; then finish "tool_calls".
   */
  toolCalls(calls: FakeToolCall[], opts: { fragments?: number; text?: string; usage?: FakeUsage; delayMs?: number } = {}): ScriptedReply {
    const steps: StreamStep[] = [{ type: "delta", delta: { role: "assistant", content: opts.text ?? null } }];
    calls.forEach((call, index) => {
      steps.push({
        type: "delta",
        delta: { tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] },
      });
      for (const piece of split(call.arguments, opts.fragments ?? 3)) {
        steps.push({ type: "delta", delta: { tool_calls: [{ index, function: { arguments: piece } }] } });
      }
    });
    steps.push({ type: "finish", reason: "tool_calls" });
    if (opts.usage) steps.push({ type: "usage", usage: opts.usage });
    steps.push({ type: "done" });
    return withDelay({ kind: "stream", steps }, opts.delayMs);
  },

  /** An HTTP error with the OpenAI error envelope `{ error: { message, type, code } }`. */
  httpError(status: number, message: string, code?: string, type = "error", headers?: Record<string, string>): ScriptedReply {
    return { kind: "http_error", status, body: { error: { message, type, code: code ?? null } }, ...(headers ? { headers } : {}) };
  },

  /** Some text chunks, then `data: {not json`. */
  malformed(before: string[] = []): ScriptedReply {
    const steps: StreamStep[] = before.map((c) => ({ type: "delta", delta: { content: c } }) as StreamStep);
    steps.push({ type: "raw", data: "{not json" });
    return { kind: "stream", steps };
  },

  /** Some text chunks, then the socket is destroyed: no finish_reason, no [DONE]. */
  dropAfter(chunks: string[], opts: { delayMs?: number } = {}): ScriptedReply {
    const steps: StreamStep[] = chunks.map((c) => ({ type: "delta", delta: { content: c } }) as StreamStep);
    steps.push({ type: "drop" });
    return withDelay({ kind: "stream", steps }, opts.delayMs);
  },

  /** Some text chunks, then an error object inside the stream. */
  streamError(message: string, code?: string, before: string[] = []): ScriptedReply {
    const steps: StreamStep[] = before.map((c) => ({ type: "delta", delta: { content: c } }) as StreamStep);
    steps.push(code === undefined ? { type: "error", message } : { type: "error", message, code });
    return { kind: "stream", steps };
  },

  /** Any sequence of steps. */
  stream(steps: StreamStep[], chunkDelayMs?: number): ScriptedReply {
    return withDelay({ kind: "stream", steps }, chunkDelayMs);
  },
};

function withDelay(r: ScriptedReply & { kind: "stream" }, delayMs: number | undefined): ScriptedReply {
  return delayMs ? { ...r, chunkDelayMs: delayMs } : r;
}

/** Splits text into `n` pieces (fewer when it is short) that join back to it. */
function split(text: string, n: number): string[] {
  if (text.length === 0) return [];
  const size = Math.max(1, Math.ceil(text.length / Math.max(1, n)));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const queue: ScriptedReply[] = [];
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let completionSeq = 0;
  let connections = 0;

  const server: Server = createServer((req, res) => {
    void handle(req, res).catch(() => res.destroy());
  });
  server.on("connection", (socket) => {
    connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0]!;
    const raw = await readBody(req);
    if (req.method === "GET" && path === "/v1/models") {
      return sendJson(res, 200, { object: "list", data: [{ id: "fake-model", object: "model", owned_by: "fake" }] });
    }
    if (req.method !== "POST" || path !== "/v1/chat/completions") {
      return sendJson(res, 404, { error: { message: `fake-openai: no route ${req.method} ${path}`, type: "not_found", code: null } });
    }
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      body = undefined;
    }
    requests.push({ method: req.method, path, headers: req.headers, body });
    const next = queue.shift();
    if (!next) {
      return sendJson(res, 500, { error: { message: "fake-openai: no scripted reply left", type: "server_error", code: null } });
    }
    if (next.kind === "http_error") return sendJson(res, next.status, next.body, next.headers);
    const model = (body as { model?: unknown } | undefined)?.model;
    await streamReply(res, next, typeof model === "string" ? model : "fake-model", `chatcmpl-fake-${++completionSeq}`);
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    script: (...replies) => void queue.push(...replies),
    requests,
    get pending() {
      return queue.length;
    },
    get connections() {
      return connections;
    },
    dropConnections: () => {
      for (const s of sockets) s.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

async function streamReply(
  res: ServerResponse,
  reply: ScriptedReply & { kind: "stream" },
  model: string,
  id: string,
): Promise<void> {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  res.flushHeaders();
  // The client may hang up (an aborted request): stop writing instead of erroring.
  let gone = false;
  res.on("close", () => (gone = true));
  const created = Math.floor(Date.now() / 1000);
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices, ...extra });

  for (const step of reply.steps) {
    if (gone) return;
    switch (step.type) {
      case "delta":
        if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
        if (gone) return;
        res.write(`data: ${chunk([{ index: 0, delta: step.delta, finish_reason: null }])}\n\n`);
        break;
      case "finish":
        res.write(`data: ${chunk([{ index: 0, delta: {}, finish_reason: step.reason }])}\n\n`);
        break;
      case "usage":
        res.write(`data: ${chunk([], { usage: step.usage })}\n\n`);
        break;
      case "error":
        res.write(
          `data: ${JSON.stringify({ error: { message: step.message, type: step.errorType ?? "server_error", code: step.code ?? null } })}\n\n`,
        );
        break;
      case "raw":
        res.write(`data: ${step.data}\n\n`);
        break;
      case "delay":
        await sleep(step.ms);
        break;
      case "wait":
        step.reached?.();
        await step.until.catch(() => undefined);
        break;
      case "drop":
        // Let the bytes written so far reach the client, then cut the connection.
        await sleep(10);
        res.socket?.destroy();
        return;
      case "done":
        res.write("data: [DONE]\n\n");
        res.end();
        return;
    }
  }
  // Steps ended without "done" or "drop": end the response cleanly but without [DONE].
  res.end();
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (b: Buffer) => parts.push(b));
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
