/**
 * The Response object as OpenAI's clients read it, with the official `openai` client against a
 * real gateway and a scripted OpenAI-compatible upstream: it echoes what the request asked (tools,
 * tool_choice, parallel_tool_calls, sampling) — also read back later; a response that ends on a
 * client tool call reports the usage of its model call; a continuation's stream has
 * `response.in_progress` like any; `DELETE /v1/responses/{id}` deletes the caller's response only.
 */
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";

let server: TestServer | undefined;
let upstream: FakeOpenAI | undefined;
afterEach(async () => {
  await server?.close();
  await upstream?.close();
  server = upstream = undefined;
});

const weather: OpenAI.Responses.FunctionTool = {
  type: "function",
  name: "get_weather",
  description: "Weather of a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: false,
};
const USAGE = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };

async function gateway(config: Record<string, unknown> = {}) {
  upstream = await startFakeOpenAI();
  server = await startTestServer({ providerUrl: upstream.url, config });
  return { s: server, up: upstream };
}

describe("the Response object", () => {
  it("echoes the request's tools, tool_choice, parallel_tool_calls and sampling; ends on a function_call with the usage of its model call", async () => {
    const { s, up } = await gateway();
    const ai = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: "unused", maxRetries: 0 });
    up.script(reply.toolCalls([{ id: "call_w", name: "get_weather", arguments: '{"city":"Bern"}' }], { usage: USAGE }));
    const asked = {
      tools: [weather],
      tool_choice: { type: "function" as const, name: "get_weather" },
      parallel_tool_calls: false,
      temperature: 0.3,
      top_p: 0.8,
      max_output_tokens: 64,
    };
    const first = await ai.responses.create({ model: "test-model", input: "weather in Bern?", ...asked });
    expect(first.output.map((o) => o.type)).toEqual(["function_call"]);
    expect(first).toMatchObject(asked);
    expect(first.usage).toMatchObject({ input_tokens: 11, output_tokens: 7, total_tokens: 18 });
    // Read back (from the stored record): the same.
    const again = await ai.responses.retrieve(first.id);
    expect(again).toMatchObject({ ...asked, usage: { total_tokens: 18 } });
    // The named choice offered the model the client's tool only.
    expect((up.requests[0]!.body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name)).toEqual(["get_weather"]);

    // Asked nothing: OpenAI's defaults.
    up.script(reply.text(["ok"], { usage: USAGE }));
    const plain = await ai.responses.create({ model: "test-model", input: "hi" });
    expect(plain).toMatchObject({ tools: [], tool_choice: "auto", parallel_tool_calls: true, temperature: null, top_p: null, truncation: "disabled" });
  });

  it("a continuation's stream (function_call_output) has response.in_progress right after response.created", async () => {
    const { s, up } = await gateway();
    const ai = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: "unused", maxRetries: 0 });
    up.script(reply.toolCalls([{ id: "call_w", name: "get_weather", arguments: '{"city":"Oslo"}' }]), reply.text(["It ", "snows."], { usage: USAGE }));
    const first = await ai.responses.create({ model: "test-model", input: "weather in Oslo?", tools: [weather] });
    const stream = await ai.responses.create({
      model: "test-model",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: "call_w", output: "snow" }],
      tools: [weather],
      stream: true,
    });
    const types: string[] = [];
    let done: OpenAI.Responses.Response | undefined;
    for await (const e of stream) {
      types.push(e.type);
      if (e.type === "response.completed") done = e.response;
    }
    expect(types.slice(0, 2)).toEqual(["response.created", "response.in_progress"]);
    expect(types.at(-1)).toBe("response.completed");
    expect(done).toMatchObject({ tools: [weather], usage: { total_tokens: 18 } });
    expect(done!.output.map((o) => o.type)).toEqual(["message"]);
  });

  it("DELETE /v1/responses/{id}: the caller's response is deleted (then 404 on every route); another principal's answers 404 like an unknown id", async () => {
    const { s, up } = await gateway({ auth: { keys: { "alice-key": "alice", "bob-key": "bob" } } });
    const alice = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: "alice-key", maxRetries: 0 });
    const bob = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: "bob-key", maxRetries: 0 });
    up.script(reply.text(["one"]), reply.text(["two"]));
    const r1 = await alice.responses.create({ model: "test-model", input: "first" });
    const r2 = await alice.responses.create({ model: "test-model", input: "second", previous_response_id: r1.id });

    const notBobs = await fetch(`${s.url}/v1/responses/${r1.id}`, { method: "DELETE", headers: { authorization: "Bearer bob-key" } });
    const unknown = await fetch(`${s.url}/v1/responses/resp_nope`, { method: "DELETE", headers: { authorization: "Bearer bob-key" } });
    expect(notBobs.status).toBe(404);
    expect(unknown.status).toBe(404);
    const [a, b] = [await notBobs.json(), await unknown.json()];
    expect(a.error.code).toBe("response_not_found");
    expect(a.error.message.replace(r1.id, "ID")).toBe(b.error.message.replace("resp_nope", "ID"));
    await expect(bob.responses.retrieve(r1.id)).rejects.toMatchObject({ status: 404 });
    expect((await alice.responses.retrieve(r1.id)).id).toBe(r1.id);

    const deleted = await fetch(`${s.url}/v1/responses/${r1.id}`, { method: "DELETE", headers: { authorization: "Bearer alice-key" } });
    expect(deleted.status).toBe(200);
    expect(await deleted.json()).toEqual({ id: r1.id, object: "response", deleted: true });
    await expect(alice.responses.delete(r2.id)).resolves.toEqual({ id: r2.id, object: "response", deleted: true });
    await expect(alice.responses.retrieve(r1.id)).rejects.toMatchObject({ status: 404 });
    await expect(alice.responses.retrieve(r2.id)).rejects.toMatchObject({ status: 404 });
    await expect(alice.responses.create({ model: "test-model", input: "third", previous_response_id: r2.id })).rejects.toMatchObject({
      status: 404,
      param: "previous_response_id",
    });
    const twice = await fetch(`${s.url}/v1/responses/${r1.id}`, { method: "DELETE", headers: { authorization: "Bearer alice-key" } });
    expect(twice.status).toBe(404);
  });
});
