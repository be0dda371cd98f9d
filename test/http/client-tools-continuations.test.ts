/**
 * Client tools across requests, with the official `openai` client against a real gateway and a
 * scripted OpenAI-compatible upstream: a continuation that sends no `tools` keeps the tools the
 * session has (a session made over the WebSocket keeps its `client_tools` for good), and a model's
 * arguments that are not JSON reach the client as the model wrote them, as OpenAI passes them.
 */
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

let server: TestServer | undefined;
let upstream: FakeOpenAI | undefined;
let socket: RpcSocket | undefined;
afterEach(async () => {
  socket?.close();
  await server?.close();
  await upstream?.close();
  server = upstream = socket = undefined;
});

async function gateway() {
  upstream = await startFakeOpenAI();
  server = await startTestServer({ providerUrl: upstream.url });
  return { s: server, up: upstream, ai: new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 }) };
}

const weather = { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } } } };
const offered = (up: FakeOpenAI, i: number) => ((up.requests[i]!.body.tools ?? []) as Array<{ function: { name: string } }>).map((t) => t.function.name);

describe("a continuation without tools", () => {
  it("keeps the client tools of a session made over the WebSocket, for the next model call and for good", async () => {
    const { s, up, ai } = await gateway();
    socket = await RpcSocket.open(s.wsUrl);
    const { session_id } = await socket.call("session.create", { client_tools: [weather] });
    up.script(reply.toolCalls([{ id: "call_w", name: "get_weather", arguments: '{"city":"Bern"}' }]), reply.text(["cold"]), reply.text(["again"]));
    const headers = { "X-Session-Id": session_id };

    const first = await ai.chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "weather?" }] }, { headers });
    expect(first.choices[0]!.finish_reason).toBe("tool_calls");
    expect(offered(up, 0)).toContain("get_weather");
    // Only the tool message: the model's next call still has the session's tools.
    const second = await ai.chat.completions.create({ model: "test-model", messages: [{ role: "tool", tool_call_id: "call_w", content: "-3 C" }] }, { headers });
    expect(second.choices[0]!.message.content).toBe("cold");
    expect(offered(up, 1)).toContain("get_weather");
    // And later turns too: nothing removed them.
    await ai.chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "and now?" }] }, { headers });
    expect(offered(up, 2)).toContain("get_weather");
  });

  it("Responses: function_call_output without tools continues with the tools the response was made with", async () => {
    const { up, ai } = await gateway();
    up.script(reply.toolCalls([{ id: "call_w", name: "get_weather", arguments: '{"city":"Oslo"}' }]), reply.text(["snowy"]));
    const first = await ai.responses.create({ model: "test-model", input: "weather?", tools: [{ type: "function", strict: false, ...weather }] });
    const second = await ai.responses.create({
      model: "test-model",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: "call_w", output: "snow" }],
    });
    expect(second.output_text).toBe("snowy");
    expect(offered(up, 1)).toContain("get_weather");
  });
});

describe("a model's tool arguments that are not JSON", () => {
  const RAW = '{"city": "Bern", oops';

  it("reach the client as written (chat completions, streamed and not; Responses); its result continues the turn", async () => {
    const { up, ai } = await gateway();
    const tools: OpenAI.Chat.ChatCompletionTool[] = [{ type: "function", function: weather }];
    up.script(reply.toolCalls([{ id: "call_raw", name: "get_weather", arguments: RAW }]), reply.text(["fixed"]));
    const first = await ai.chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "weather?" }], tools }).withResponse();
    const call = first.data.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
    expect(first.data.choices[0]!.finish_reason).toBe("tool_calls");
    expect(call.function.arguments).toBe(RAW);
    // The gateway did not answer the model itself: only one model call so far.
    expect(up.requests).toHaveLength(1);
    const second = await ai.chat.completions.create(
      { model: "test-model", messages: [{ role: "tool", tool_call_id: "call_raw", content: "bad arguments, city is Bern" }], tools },
      { headers: { "X-Session-Id": first.response.headers.get("x-session-id")! } },
    );
    expect(second.choices[0]!.message.content).toBe("fixed");
    expect(up.requests[1]!.body.messages.slice(-2)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: "call_raw", type: "function", function: { name: "get_weather", arguments: RAW } }] },
      { role: "tool", content: "bad arguments, city is Bern", tool_call_id: "call_raw" },
    ]);

    up.script(reply.toolCalls([{ id: "call_raw2", name: "get_weather", arguments: RAW }]));
    const runner = ai.chat.completions.stream({ model: "test-model", messages: [{ role: "user", content: "again" }], tools });
    const streamed = await runner.finalChatCompletion();
    expect((streamed.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall).function.arguments).toBe(RAW);

    up.script(reply.toolCalls([{ id: "call_raw3", name: "get_weather", arguments: RAW }]));
    const response = await ai.responses.create({ model: "test-model", input: "weather?", tools: [{ type: "function", strict: false, ...weather }] });
    expect(response.output).toMatchObject([{ type: "function_call", call_id: "call_raw3", arguments: RAW }]);
  });
});
