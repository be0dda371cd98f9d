/**
 * Attachments through the OpenAI-compatible endpoints with unchanged clients: the `openai` package
 * (Chat Completions `image_url` + `file`, Responses `input_image` + `input_file`) and the AI SDK
 * (`generateText` with an image part, via @ai-sdk/openai-compatible). A scripted upstream receives
 * the parts unchanged in meaning; the transcript keeps them by sha256 across a restart; the blob
 * route serves the caller and 404s another principal.
 */
import OpenAI from "openai";
import { generateText } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { startFakeOpenAI, reply, type FakeOpenAI } from "../support/fake-openai-server.js";
import { tempDbPath } from "../support/temp-db.js";
import { PDF, PDF_B64, PNG, PNG_B64, sha256 } from "../support/attachment-fixtures.js";

let server: TestServer | undefined;
let ai: FakeOpenAI | undefined;
afterEach(async () => {
  await server?.close();
  await ai?.close();
  server = undefined;
  ai = undefined;
});

const KEYS = { "alice-key": "alice", "bob-key": "bob" };
const config = { auth: { keys: KEYS }, models: { modalities: { "test-model": ["text", "image", "file"] as ("text" | "image" | "file")[] } } };

async function get(path: string, key = "alice-key") {
  const res = await fetch(`${server!.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, type: res.headers.get("content-type"), bytes: Buffer.from(await res.arrayBuffer()) };
}

async function expectBlobs(): Promise<void> {
  for (const [bytes, type] of [[PNG, "image/png"], [PDF, "application/pdf"]] as const) {
    const mine = await get(`/api/blobs/${sha256(bytes)}`);
    expect([mine.status, mine.type, mine.bytes.equals(bytes)]).toEqual([200, type, true]);
    expect((await get(`/api/blobs/${sha256(bytes)}`, "bob-key")).status).toBe(404);
  }
}

const lastUser = (f: FakeOpenAI) => {
  const msgs = f.requests.at(-1)!.body.messages as Array<{ role: string; content: unknown }>;
  return msgs.filter((m) => m.role === "user").at(-1)!;
};

const upstreamParts = [
  { type: "text", text: "Describe" },
  { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_B64}` } },
  { type: "file", file: { filename: "report.pdf", file_data: `data:application/pdf;base64,${PDF_B64}` } },
];

describe("attachments with unchanged OpenAI clients", () => {
  it("Chat Completions: image_url and file reach the upstream; the session keeps them across a restart", async () => {
    ai = await startFakeOpenAI();
    ai.script(reply.text(["seen"]));
    const dbPath = tempDbPath();
    server = await startTestServer({ dbPath, providerUrl: ai.url, config });
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "alice-key", maxRetries: 0 });
    const { data, response } = await client.chat.completions
      .create({
        model: "test-model",
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "Describe" },
              { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_B64}` } },
              { type: "file", file: { filename: "report.pdf", file_data: `data:application/pdf;base64,${PDF_B64}` } },
            ],
          },
        ],
      })
      .withResponse();
    expect(data.choices[0]!.message.content).toBe("seen");
    expect(lastUser(ai).content).toEqual(upstreamParts);
    const sessionId = response.headers.get("x-session-id")!;
    await expectBlobs();
    await server.close();
    server = await startTestServer({ dbPath, providerUrl: ai.url, config });
    const res = await fetch(`${server.url}/api/sessions/${sessionId}/messages`, { headers: { authorization: "Bearer alice-key" } });
    const messages = ((await res.json()) as { messages: Array<{ parts?: Array<{ sha256?: string }> }> }).messages;
    expect(messages[0]!.parts!.map((p) => p.sha256)).toEqual([undefined, sha256(PNG), sha256(PDF)]);
    await expectBlobs();
  });

  it("Chat Completions: an https image URL is passed on as a URL, never fetched", async () => {
    ai = await startFakeOpenAI();
    ai.script(reply.text(["ok"]));
    server = await startTestServer({ providerUrl: ai.url, config });
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "alice-key", maxRetries: 0 });
    const url = "https://images.example.invalid/cat.png";
    await client.chat.completions.create({ model: "test-model", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url, detail: "low" } }] }] });
    expect(lastUser(ai).content).toEqual([{ type: "image_url", image_url: { url, detail: "low" } }]);
  });

  it("Responses: input_image and input_file reach the upstream as chat parts; the session keeps them across a restart", async () => {
    ai = await startFakeOpenAI();
    ai.script(reply.text(["seen"]));
    const dbPath = tempDbPath();
    server = await startTestServer({ dbPath, providerUrl: ai.url, config });
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "alice-key", maxRetries: 0 });
    const r = await client.responses.create({
      model: "test-model",
      input: [
        {
          role: "user",
          content: [
            { type: "input_text", text: "Describe" },
            { type: "input_image", image_url: `data:image/png;base64,${PNG_B64}`, detail: "auto" },
            { type: "input_file", filename: "report.pdf", file_data: `data:application/pdf;base64,${PDF_B64}` },
          ],
        },
      ],
    });
    expect(r.output_text).toBe("seen");
    expect(lastUser(ai).content).toEqual([
      upstreamParts[0],
      { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_B64}`, detail: "auto" } },
      upstreamParts[2],
    ]);
    await expectBlobs();
    await server.close();
    server = await startTestServer({ dbPath, providerUrl: ai.url, config });
    const list = await fetch(`${server.url}/api/sessions?include_hidden=true`, { headers: { authorization: "Bearer alice-key" } });
    const [only] = ((await list.json()) as { sessions: Array<{ session_id: string }> }).sessions;
    const res = await fetch(`${server.url}/api/sessions/${only!.session_id}/messages`, { headers: { authorization: "Bearer alice-key" } });
    const messages = ((await res.json()) as { messages: Array<{ parts?: Array<{ sha256?: string }> }> }).messages;
    expect(messages[0]!.parts!.map((p) => p.sha256)).toEqual([undefined, sha256(PNG), sha256(PDF)]);
    await expectBlobs();
  });

  it("the AI SDK: generateText with an image part, via @ai-sdk/openai-compatible", async () => {
    ai = await startFakeOpenAI();
    ai.script(reply.text(["a red dot"]));
    server = await startTestServer({ providerUrl: ai.url, config });
    const provider = createOpenAICompatible({ name: "tether", baseURL: `${server.url}/v1`, apiKey: "alice-key" });
    const { text } = await generateText({
      model: provider("test-model"),
      messages: [{ role: "user", content: [{ type: "text", text: "Describe" }, { type: "image", image: PNG, mediaType: "image/png" }] }],
    });
    expect(text).toBe("a red dot");
    expect(lastUser(ai).content).toEqual([upstreamParts[0], upstreamParts[1]]);
    expect((await get(`/api/blobs/${sha256(PNG)}`)).bytes.equals(PNG)).toBe(true);
  });
});

describe("attachments in earlier messages of a stateless request: carried, never dropped", () => {
  const messagesOf = async (sessionId: string) => {
    const res = await fetch(`${server!.url}/api/sessions/${sessionId}/messages`, { headers: { authorization: "Bearer alice-key" } });
    return ((await res.json()) as { messages: Array<{ role: string; content: string; parts?: Array<{ type: string; sha256?: string }> }> }).messages;
  };
  const userContents = (f: FakeOpenAI) => (f.requests.at(-1)!.body.messages as Array<{ role: string; content: unknown }>).filter((m) => m.role === "user").map((m) => m.content);

  it("Chat Completions: an earlier user message's image reaches the upstream as history and is stored by sha256; a model without vision refuses it by path", async () => {
    ai = await startFakeOpenAI();
    ai.script(reply.text(["the file is a report"]));
    server = await startTestServer({ providerUrl: ai.url, config });
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "alice-key", maxRetries: 0 });
    const { response } = await client.chat.completions
      .create({
        model: "test-model",
        messages: [
          { role: "user", content: [upstreamParts[0] as { type: "text"; text: string }, upstreamParts[1] as { type: "image_url"; image_url: { url: string } }] },
          { role: "assistant", content: "a red dot" },
          { role: "user", content: [{ type: "text", text: "and this?" }, upstreamParts[2] as { type: "file"; file: { filename: string; file_data: string } }] },
        ],
      })
      .withResponse();
    expect(userContents(ai)).toEqual([[upstreamParts[0], upstreamParts[1]], [{ type: "text", text: "and this?" }, upstreamParts[2]]]);
    const stored = await messagesOf(response.headers.get("x-session-id")!);
    expect(stored.filter((m) => m.role === "user").map((m) => m.parts!.map((p) => p.sha256))).toEqual([[undefined, sha256(PNG)], [undefined, sha256(PDF)]]);
    await expectBlobs();

    await server.close();
    server = await startTestServer({ providerUrl: ai.url, config: { auth: { keys: KEYS } } });
    const blind = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "alice-key", maxRetries: 0 });
    const err = (await blind.chat.completions
      .create({ model: "test-model", messages: [{ role: "user", content: [upstreamParts[1] as { type: "image_url"; image_url: { url: string } }] }, { role: "assistant", content: "?" }, { role: "user", content: "well?" }] })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect([err.status, err.code]).toEqual([400, "model_cannot_take_part"]);
    expect(err.message).toContain("messages.0.content.0");
    expect(err.message).toContain("test-model");
    expect(ai.requests).toHaveLength(1);
  });

  it("Responses: an earlier user message's input_image is history; one in an assistant message or a function_call_output is refused by path", async () => {
    ai = await startFakeOpenAI();
    ai.script(reply.text(["still a dot"]));
    server = await startTestServer({ providerUrl: ai.url, config });
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "alice-key", maxRetries: 0 });
    const image = { type: "input_image" as const, image_url: `data:image/png;base64,${PNG_B64}`, detail: "auto" as const };
    const r = await client.responses.create({
      model: "test-model",
      input: [
        { role: "user", content: [{ type: "input_text", text: "Describe" }, image] },
        { role: "assistant", content: "a red dot" },
        { role: "user", content: "sure?" },
      ],
    });
    expect(r.output_text).toBe("still a dot");
    expect(userContents(ai)).toEqual([[upstreamParts[0], { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_B64}`, detail: "auto" } }], "sure?"]);
    const refused = async (input: unknown[]) => {
      const res = await fetch(`${server!.url}/v1/responses`, { method: "POST", headers: { authorization: "Bearer alice-key", "content-type": "application/json" }, body: JSON.stringify({ model: "test-model", input }) });
      return { status: res.status, error: ((await res.json()) as { error: { param: string; message: string } }).error };
    };
    const byAssistant = await refused([{ role: "user", content: "hi" }, { role: "assistant", content: [image] }, { role: "user", content: "so?" }]);
    expect([byAssistant.status, byAssistant.error.param]).toEqual([400, "input.1.content.0"]);
    const byTool = await refused([
      { role: "user", content: "hi" },
      { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: [image] },
    ]);
    expect([byTool.status, byTool.error.param]).toEqual([400, "input.2.output.0.type"]);
    expect(byTool.error.message).toContain("input_image");
    expect(ai.requests).toHaveLength(1);
  });
});
