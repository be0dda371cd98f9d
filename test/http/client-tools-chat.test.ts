/**
 * OpenAI function calling through /v1/chat/completions, with the official `openai` client: the
 * request's tools are the client's own, a call of one ends the completion with `tool_calls`
 * (streamed and not, several in one step), and the next request continues the turn — stateless
 * (the whole history sent back) or with `X-Session-Id` (only the tool messages). The demo
 * provider's `call:` cue makes the model call them, offline.
 */
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { reply, startFakeOpenAI } from "../support/fake-openai-server.js";

let srv: TestServer;
let ai: OpenAI;

beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 0 });
  ai = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
afterAll(async () => {
  await srv?.close();
});

const weather: OpenAI.Chat.ChatCompletionTool = {
  type: "function",
  function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
};
const time: OpenAI.Chat.ChatCompletionTool = {
  type: "function",
  function: { name: "get_time", parameters: { type: "object", properties: { tz: { type: "string" } } } },
};

type Msg = OpenAI.Chat.ChatCompletionMessageParam;

describe("chat completions: client tools", () => {
  it("a call of a client tool ends the completion with tool_calls; the whole history sent back continues it (stateless)", async () => {
    const messages: Msg[] = [{ role: "user", content: 'call: get_weather {"city": "Paris"}' }];
    const first = await ai.chat.completions.create({ model: "demo", messages, tools: [weather] });
    const choice = first.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toHaveLength(1);
    const call = choice.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
    expect(call.type).toBe("function");
    expect(call.function.name).toBe("get_weather");
    expect(JSON.parse(call.function.arguments)).toEqual({ city: "Paris" });

    messages.push(choice.message, { role: "tool", tool_call_id: call.id, content: "sunny, 21 C" });
    const second = await ai.chat.completions.create({ model: "demo", messages, tools: [weather] });
    expect(second.choices[0]!.finish_reason).toBe("stop");
    expect(second.choices[0]!.message.content).toBe("get_weather returned: sunny, 21 C");
  });

  it("with X-Session-Id only the tool messages are sent; the parked turn resumes from the store", async () => {
    const first = await ai.chat.completions
      .create({ model: "demo", messages: [{ role: "user", content: 'call: get_weather {"city": "Oslo"}' }], tools: [weather] })
      .withResponse();
    const sessionId = first.response.headers.get("x-session-id")!;
    const call = first.data.choices[0]!.message.tool_calls![0]!;
    const second = await ai.chat.completions.create(
      { model: "demo", messages: [{ role: "tool", tool_call_id: call.id, content: "snow" }], tools: [weather] },
      { headers: { "X-Session-Id": sessionId } },
    );
    expect(second.choices[0]!.message.content).toBe("get_weather returned: snow");
    // One turn: the tool result and the answer are in the same session, after the call.
    const msgs = (await (await fetch(`${srv.url}/api/sessions/${sessionId}/messages`)).json()) as { messages: Array<{ role: string; content: string }> };
    expect(msgs.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(msgs.messages[2]!.content).toBe("snow");
  });

  it("parallel calls in one step, streamed as delta.tool_calls with OpenAI's indexes and ids", async () => {
    const stream = await ai.chat.completions.create({
      model: "demo",
      messages: [{ role: "user", content: 'call: get_weather {"city": "Rome"}; get_time {"tz": "CET"}' }],
      tools: [weather, time],
      stream: true,
    });
    const deltas: OpenAI.Chat.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      deltas.push(...(chunk.choices[0]?.delta.tool_calls ?? []));
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe("tool_calls");
    const heads = deltas.filter((d) => d.id);
    expect(heads.map((d) => [d.index, d.function?.name])).toEqual([
      [0, "get_weather"],
      [1, "get_time"],
    ]);
    const argsOf = (i: number) => deltas.filter((d) => d.index === i).map((d) => d.function?.arguments ?? "").join("");
    expect(JSON.parse(argsOf(0))).toEqual({ city: "Rome" });
    expect(JSON.parse(argsOf(1))).toEqual({ tz: "CET" });
  });

  it("the stream helper assembles the calls; the streamed continuation answers both results", async () => {
    const messages: Msg[] = [{ role: "user", content: 'call: get_weather {"city": "Lima"}; get_time {}' }];
    const runner = ai.chat.completions.stream({ model: "demo", messages, tools: [weather, time] });
    const done = await runner.finalChatCompletion();
    const message = done.choices[0]!.message;
    expect(message.tool_calls!.map((c) => (c as OpenAI.Chat.ChatCompletionMessageFunctionToolCall).function.name)).toEqual(["get_weather", "get_time"]);
    messages.push(
      { role: "assistant", content: null, tool_calls: message.tool_calls! },
      { role: "tool", tool_call_id: message.tool_calls![0]!.id, content: "fog" },
      { role: "tool", tool_call_id: message.tool_calls![1]!.id, content: "noon" },
    );
    const next = ai.chat.completions.stream({ model: "demo", messages, tools: [weather, time] });
    expect(await next.finalContent()).toBe("get_weather returned: fog\nget_time returned: noon");
  });

  it("parallel_tool_calls: false makes one call per step", async () => {
    const messages: Msg[] = [{ role: "user", content: "call: get_weather {\"city\": \"A\"}; get_time {}" }];
    const first = await ai.chat.completions.create({ model: "demo", messages, tools: [weather, time], parallel_tool_calls: false });
    expect(first.choices[0]!.message.tool_calls).toHaveLength(1);
    const c1 = first.choices[0]!.message.tool_calls![0]!;
    messages.push(first.choices[0]!.message, { role: "tool", tool_call_id: c1.id, content: "r1" });
    const second = await ai.chat.completions.create({ model: "demo", messages, tools: [weather, time], parallel_tool_calls: false });
    const c2 = second.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
    expect(c2.function.name).toBe("get_time");
    messages.push(second.choices[0]!.message, { role: "tool", tool_call_id: c2.id, content: "r2" });
    const third = await ai.chat.completions.create({ model: "demo", messages, tools: [weather, time], parallel_tool_calls: false });
    expect(third.choices[0]!.message.content).toBe("get_weather returned: r1\nget_time returned: r2");
  });

  it("tool_choice: none answers in text; a named function is called without a cue; required forces a call", async () => {
    const none = await ai.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "call: get_weather {}" }], tools: [weather], tool_choice: "none" });
    expect(none.choices[0]!.finish_reason).toBe("stop");
    expect(none.choices[0]!.message.tool_calls ?? []).toHaveLength(0);
    const named = await ai.chat.completions.create({
      model: "demo",
      messages: [{ role: "user", content: "hello" }],
      tools: [weather, time],
      tool_choice: { type: "function", function: { name: "get_time" } },
    });
    expect((named.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall).function.name).toBe("get_time");
    // `required` on a prompt that asks for no tool: the demo calls the first tool offered — the
    // client's, since a forced choice offers only the client's tools (never the gateway's `todo`).
    const required = await ai.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "hello" }], tools: [weather], tool_choice: "required" });
    expect(required.choices[0]!.finish_reason).toBe("tool_calls");
    expect((required.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall).function.name).toBe("get_weather");
  });

  it("tool_choice required without tools is a 400 naming tool_choice, as on OpenAI (the gateway's own tools cannot satisfy it)", async () => {
    await expect(ai.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "hello" }], tool_choice: "required" })).rejects.toMatchObject({
      status: 400,
      param: "tool_choice",
    });
    await expect(
      ai.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "hello" }], tool_choice: { type: "function", function: { name: "todo" } } }),
    ).rejects.toMatchObject({ status: 400, param: "tool_choice.function.name" });
  });

  it("refuses by name: a collision with a server tool, a result for a call that is not pending, n > 1, an unknown parameter", async () => {
    const todo: OpenAI.Chat.ChatCompletionTool = { type: "function", function: { name: "todo", parameters: {} } };
    await expect(ai.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "hi" }], tools: [weather, todo] })).rejects.toMatchObject({
      status: 400,
      param: "tools.1.function.name",
    });
    const first = await ai.chat.completions
      .create({ model: "demo", messages: [{ role: "user", content: "call: get_weather {}" }], tools: [weather] })
      .withResponse();
    await expect(
      ai.chat.completions.create(
        { model: "demo", messages: [{ role: "tool", tool_call_id: "call_nope", content: "x" }], tools: [weather] },
        { headers: { "X-Session-Id": first.response.headers.get("x-session-id")! } },
      ),
    ).rejects.toMatchObject({ status: 400, param: "messages.0.tool_call_id" });
    await expect(
      ai.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "x" }, { role: "tool", tool_call_id: "call_nope", content: "x" }] }),
    ).rejects.toMatchObject({ status: 400, param: "messages.1.tool_call_id" });
    await expect(ai.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "x" }], n: 2 })).rejects.toMatchObject({ status: 400, param: "n" });
    await expect(ai.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "x" }], logprobs: true })).rejects.toMatchObject({ status: 400, param: "logprobs" });
    await expect(
      ai.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "x" }], bogus_param: 1 } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming),
    ).rejects.toMatchObject({ status: 400, param: "bogus_param" });
  });
});

describe("chat completions: what reaches an OpenAI-compatible upstream", () => {
  it("the history with tool_calls and tool results exactly, a forced tool_choice offering the client's tools only, then the client's tools beside the gateway's, and the sampling parameters", async () => {
    const upstream = await startFakeOpenAI();
    const gw = await startTestServer({ providerUrl: upstream.url });
    try {
      upstream.script(reply.toolCalls([{ id: "call_up_1", name: "get_weather", arguments: '{"city":"Bern"}' }]));
      upstream.script(reply.text(["It is ", "cold."]));
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "unused", maxRetries: 0 });
      const messages: Msg[] = [
        { role: "system", content: "Be brief." },
        { role: "user", content: "weather in Bern?" },
      ];
      const params = { temperature: 0.2, top_p: 0.9, max_tokens: 50, stop: ["\n\n"], seed: 7, user: "u-1", response_format: { type: "text" as const } };
      const first = await client.chat.completions.create({ model: "test-model", messages, tools: [weather], tool_choice: "required", parallel_tool_calls: false, ...params });
      expect(first.choices[0]!.message.tool_calls![0]!.id).toBe("call_up_1");
      const body0 = upstream.requests[0]!.body;
      expect(body0).toMatchObject({ ...params, tool_choice: "required", parallel_tool_calls: false });
      // A forced choice is the client's: that call offers the client's tools only.
      const offered = (body0.tools as Array<{ function: { name: string } }>).map((t) => t.function.name);
      expect(offered).toEqual(["get_weather"]);

      messages.push(first.choices[0]!.message, { role: "tool", tool_call_id: "call_up_1", content: "-3 C" });
      const second = await client.chat.completions.create({ model: "test-model", messages, tools: [weather], temperature: 0.2 });
      expect(second.choices[0]!.message.content).toBe("It is cold.");
      expect(upstream.requests[1]!.body.messages).toEqual([
        { role: "system", content: "Be brief." },
        { role: "user", content: "weather in Bern?" },
        { role: "assistant", content: null, tool_calls: [{ id: "call_up_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Bern"}' } }] },
        { role: "tool", content: "-3 C", tool_call_id: "call_up_1" },
      ]);
      expect(upstream.requests[1]!.body.temperature).toBe(0.2);
      expect(upstream.requests[1]!.body.tool_choice).toBeUndefined();
      // Without a forced choice the gateway's tools are offered beside the client's.
      const offeredNext = (upstream.requests[1]!.body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name);
      expect(offeredNext).toContain("todo");
      expect(offeredNext.at(-1)).toBe("get_weather");
    } finally {
      await gw.close();
      await upstream.close();
    }
  });
});

describe("chat completions: a session whose turn waits for the client", () => {
  it("a new user message with X-Session-Id while a call waits is a 400 naming the call; strict reaches the upstream", async () => {
    const first = await ai.chat.completions
      .create({ model: "demo", messages: [{ role: "user", content: "call: get_weather {}" }], tools: [weather] })
      .withResponse();
    const call = first.data.choices[0]!.message.tool_calls![0]!;
    await expect(
      ai.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "hello?" }] }, { headers: { "X-Session-Id": first.response.headers.get("x-session-id")! } }),
    ).rejects.toMatchObject({ status: 400, param: "messages", message: expect.stringContaining(call.id) });

    const upstream = await startFakeOpenAI();
    const gw = await startTestServer({ providerUrl: upstream.url });
    try {
      upstream.script(reply.text(["ok"]));
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "unused", maxRetries: 0 });
      const strictTool: OpenAI.Chat.ChatCompletionTool = { type: "function", function: { ...weather.function, strict: true } };
      await client.chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "hi" }], tools: [strictTool] });
      const sent = (upstream.requests[0]!.body.tools as Array<{ function: { name: string; strict?: boolean } }>).find((t) => t.function.name === "get_weather");
      expect(sent!.function.strict).toBe(true);
    } finally {
      await gw.close();
      await upstream.close();
    }
  });
});
