/**
 * Bad input on the OpenAI endpoints is refused as OpenAI refuses it, with the official `openai`
 * client: malformed fields inside `tools` (a `parameters` that is no JSON Schema object, a
 * description that is no string, a `strict` that is no boolean) and unknown keys on every nested
 * object the endpoint reads — each a 400 whose `param` names the field — and nothing reaches the
 * model. What is valid reaches the upstream exactly as sent.
 */
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";

let server: TestServer;
let upstream: FakeOpenAI;
let ai: OpenAI;

beforeAll(async () => {
  upstream = await startFakeOpenAI();
  server = await startTestServer({ providerUrl: upstream.url });
  ai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
afterAll(async () => {
  await server?.close();
  await upstream?.close();
});

type Body = Record<string, unknown>;
const fn = (over: Body = {}) => ({ name: "get_weather", description: "Weather", parameters: { type: "object", properties: { city: { type: "string" } } }, ...over });
const user = [{ role: "user", content: "hi" }];

/** Every refusal below is a 400 naming `param` (with `code` when given); none reaches the upstream. */
async function refused(create: () => Promise<unknown>, param: string, code?: string): Promise<void> {
  const before = upstream.requests.length;
  const err = await create().then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, `expected a 400 naming ${param}`).toBeInstanceOf(OpenAI.APIError);
  expect(err).toMatchObject({ status: 400, param, ...(code ? { code } : {}) });
  expect(upstream.requests.length).toBe(before);
}

describe("/v1/chat/completions", () => {
  const chat = (body: Body) => () => ai.chat.completions.create({ model: "test-model", messages: user, ...body } as never);
  const tool = (f: Body, extra: Body = {}) => ({ tools: [{ type: "function", function: f, ...extra }] });

  it("malformed tools: parameters that are no JSON Schema object, a description that is no string, a strict that is no boolean", async () => {
    await refused(chat(tool(fn({ parameters: "not a schema" }))), "tools.0.function.parameters");
    await refused(chat(tool(fn({ parameters: [] }))), "tools.0.function.parameters");
    await refused(chat(tool(fn({ parameters: { type: "string" } }))), "tools.0.function.parameters.type");
    await refused(chat(tool(fn({ parameters: { type: "object", properties: "city" } }))), "tools.0.function.parameters.properties");
    await refused(chat(tool(fn({ description: 42 }))), "tools.0.function.description");
    await refused(chat(tool(fn({ strict: "yes" }))), "tools.0.function.strict");
  });

  it("unknown keys, by their path: tools.N, tools.N.function, tool_choice, messages.N and their parts and calls, stream_options", async () => {
    await refused(chat(tool(fn({ colour: "red" }))), "tools.0.function.colour", "unknown_parameter");
    await refused(chat(tool(fn(), { colour: "red" })), "tools.0.colour", "unknown_parameter");
    await refused(chat({ ...tool(fn()), tool_choice: { type: "function", function: { name: "get_weather", colour: 1 } } }), "tool_choice.function.colour", "unknown_parameter");
    await refused(chat({ messages: [{ role: "user", content: "hi", colour: "red" }] }), "messages.0.colour", "unknown_parameter");
    await refused(chat({ messages: [{ role: "user", content: [{ type: "text", text: "hi", colour: 1 }] }] }), "messages.0.content.0.colour", "unknown_parameter");
    await refused(
      chat({
        messages: [
          { role: "user", content: "hi" },
          { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}", colour: 1 } }] },
          { role: "tool", tool_call_id: "c1", content: "ok" },
        ],
      }),
      "messages.1.tool_calls.0.function.colour",
      "unknown_parameter",
    );
    await refused(chat({ stream: true, stream_options: { include_usage: true, colour: 1 } }), "stream_options.colour", "unknown_parameter");
  });

  it("what Tether cannot honour is refused by name: a file_id (no Files API), participant names; image parts are strict", async () => {
    await refused(chat({ messages: [{ role: "user", content: [{ type: "file", file: { file_id: "file-1" } }] }] }), "messages.0.content.0.file.file_id");
    await refused(chat({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://example.com/a.png", colour: 1 } }] }] }), "messages.0.content.0.image_url.colour", "unknown_parameter");
    await refused(chat({ messages: [{ role: "user", content: "hi", name: "ann" }] }), "messages.0.name");
  });

  it("a valid tool reaches the upstream exactly as sent", async () => {
    upstream.script(reply.text(["ok"]));
    const parameters = { type: "object", properties: { city: { type: "string", enum: ["Bern", "Oslo"] } }, required: ["city"], additionalProperties: false };
    await ai.chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "hi" }], tools: [{ type: "function", function: { name: "get_weather", description: "Weather", parameters, strict: true } }] });
    const sent = (upstream.requests.at(-1)!.body.tools as Array<{ function: Body }>).find((t) => t.function.name === "get_weather");
    expect(sent!.function).toEqual({ name: "get_weather", description: "Weather", parameters, strict: true });
  });
});

describe("/v1/responses", () => {
  const create = (body: Body) => () => ai.responses.create({ model: "test-model", input: "hi", ...body } as never);
  const tool = (over: Body) => ({ tools: [{ type: "function", ...fn(over) }] });

  it("malformed tools", async () => {
    await refused(create(tool({ parameters: "not a schema" })), "tools.0.parameters");
    await refused(create(tool({ description: 42 })), "tools.0.description");
    await refused(create(tool({ strict: "yes" })), "tools.0.strict");
  });

  it("unknown keys, by their path: tools.N, input items and their parts, tool_choice, text, reasoning, stream_options", async () => {
    await refused(create(tool({ colour: "red" })), "tools.0.colour", "unknown_parameter");
    await refused(create({ input: [{ role: "user", content: "hi", colour: 1 }] }), "input.0.colour", "unknown_parameter");
    await refused(create({ input: [{ role: "user", content: [{ type: "input_text", text: "hi", colour: 1 }] }] }), "input.0.content.0.colour", "unknown_parameter");
    await refused(
      create({ input: [{ role: "user", content: "hi" }, { type: "function_call", call_id: "c1", name: "f", arguments: "{}" }, { type: "function_call_output", call_id: "c1", output: "x", colour: 1 }] }),
      "input.2.colour",
      "unknown_parameter",
    );
    await refused(create({ ...tool({}), tool_choice: { type: "function", name: "get_weather", colour: 1 } }), "tool_choice.colour", "unknown_parameter");
    await refused(create({ text: { format: { type: "text", colour: 1 } } }), "text.format.colour", "unknown_parameter");
    await refused(create({ reasoning: { effort: "low", colour: 1 } }), "reasoning.colour", "unknown_parameter");
    await refused(create({ stream: true, stream_options: { colour: 1 } }), "stream_options.colour", "unknown_parameter");
  });

  it("a file_id is refused by name; tool_choice required without tools is a 400", async () => {
    await refused(create({ input: [{ role: "user", content: [{ type: "input_image", file_id: "file-1" }] }] }), "input.0.content.0.file_id");
    await refused(create({ tool_choice: "required" }), "tool_choice");
  });
});
