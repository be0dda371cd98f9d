/**
 * OpenAI function calling through /v1/responses, with the official `openai` client: a call of a
 * client tool is a `function_call` output item (streamed with `response.function_call_arguments.
 * delta`/`.done`), the response completes, and `function_call_output` items continue the turn —
 * with `previous_response_id`, or in a full input list sent back whole. Background and
 * `starting_after` work for these responses as for any other.
 */
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";

let srv: TestServer;
let ai: OpenAI;

beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 0 });
  ai = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
afterAll(async () => {
  await srv?.close();
});

const weather: OpenAI.Responses.FunctionTool = {
  type: "function",
  name: "get_weather",
  description: "Weather of a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: false,
};
const calls = (r: OpenAI.Responses.Response) => r.output.filter((o): o is OpenAI.Responses.ResponseFunctionToolCall => o.type === "function_call");

describe("responses: client tools", () => {
  it("a function_call item completes the response; function_call_output with previous_response_id continues the turn", async () => {
    const first = await ai.responses.create({ model: "demo", input: 'call: get_weather {"city": "Paris"}', tools: [weather] });
    expect(first.status).toBe("completed");
    expect(first.output.map((o) => o.type)).toEqual(["function_call"]);
    const [call] = calls(first);
    expect(call).toMatchObject({ name: "get_weather", status: "completed" });
    expect(JSON.parse(call!.arguments)).toEqual({ city: "Paris" });

    const second = await ai.responses.create({
      model: "demo",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call!.call_id, output: "sunny" }],
      tools: [weather],
    });
    expect(second.status).toBe("completed");
    expect(second.output_text).toBe("get_weather returned: sunny");
  });

  it("a full input list with function_call and function_call_output continues it without previous_response_id", async () => {
    const input: OpenAI.Responses.ResponseInput = [{ role: "user", content: 'call: get_weather {"city": "Oslo"}' }];
    const first = await ai.responses.create({ model: "demo", input, tools: [weather], store: false });
    const [call] = calls(first);
    input.push(call!, { type: "function_call_output", call_id: call!.call_id, output: "snow" });
    const second = await ai.responses.create({ model: "demo", input, tools: [weather], store: false });
    expect(second.output_text).toBe("get_weather returned: snow");
  });

  it("streamed: output_item.added, function_call_arguments.delta and .done, output_item.done, then response.completed", async () => {
    const stream = await ai.responses.create({ model: "demo", input: 'call: get_weather {"city": "Rome"}', tools: [weather], stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    const types = events.map((e) => e.type);
    expect(types).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const done = events.find((e) => e.type === "response.function_call_arguments.done") as OpenAI.Responses.ResponseFunctionCallArgumentsDoneEvent;
    expect(JSON.parse(done.arguments)).toEqual({ city: "Rome" });
    const seqs = events.map((e) => e.sequence_number);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
  });

  it("background and starting_after: the function_call events are rebuilt from the event log", async () => {
    const bg = await ai.responses.create({ model: "demo", input: 'call: get_weather {"city": "Lima"}', tools: [weather], background: true });
    const all: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of await ai.responses.retrieve(bg.id, { stream: true })) all.push(e);
    const added = all.find((e) => e.type === "response.output_item.added")!;
    const rest: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of await ai.responses.retrieve(bg.id, { stream: true, starting_after: added.sequence_number })) rest.push(e);
    expect(rest.map((e) => e.type)).toEqual(["response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done", "response.completed"]);
    const final = await ai.responses.retrieve(bg.id);
    expect(calls(final)).toHaveLength(1);
  });

  it("refuses by name: an output for a call that is not pending, another tool type, an unknown parameter", async () => {
    const first = await ai.responses.create({ model: "demo", input: "call: get_weather {}", tools: [weather] });
    await expect(
      ai.responses.create({ model: "demo", previous_response_id: first.id, input: [{ type: "function_call_output", call_id: "call_nope", output: "x" }] }),
    ).rejects.toMatchObject({ status: 400, param: "input.0.call_id" });
    await expect(ai.responses.create({ model: "demo", input: "hi", tools: [{ type: "web_search" }] })).rejects.toMatchObject({ status: 400, param: "tools.0.type" });
    await expect(ai.responses.create({ model: "demo", input: "hi", top_logprobs: 2 })).rejects.toMatchObject({ status: 400, param: "top_logprobs" });
    await expect(ai.responses.create({ model: "demo", input: "hi", bogus: 1 } as OpenAI.Responses.ResponseCreateParamsNonStreaming)).rejects.toMatchObject({
      status: 400,
      param: "bogus",
    });
  });
});
