/**
 * Agent frameworks that run their own tool loop, unchanged, against the gateway: the Vercel AI SDK
 * (`generateText`/`streamText` with a tool and `stopWhen: stepCountIs(3)`, chat and responses
 * models) and LangChain (`ChatOpenAI.bindTools`, a two-step loop). Each sends its tools, gets the
 * call, runs the tool itself and sends the result back; the demo provider's `call:` cue makes the
 * model call it, and its closing sentence quotes what the tool returned.
 */
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, stepCountIs, streamText, tool } from "ai";
import { ChatOpenAI } from "@langchain/openai";
import { HumanMessage, ToolMessage, type AIMessageChunk, type BaseMessage } from "@langchain/core/messages";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { startTestServer, type TestServer } from "../support/start-server.js";

let srv: TestServer;

beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 0 });
});
afterAll(async () => {
  await srv?.close();
});

/** A tool the framework runs itself, counting its calls. */
function weatherTool(calls: string[]) {
  return tool({
    description: "Weather of a city",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      calls.push(city);
      return `sunny in ${city}`;
    },
  });
}

const PROMPT = 'call: get_weather {"city": "Paris"}';

describe("Vercel AI SDK", () => {
  const models = () => {
    const openai = createOpenAI({ baseURL: `${srv.url}/v1`, apiKey: "unused" });
    return { chat: openai.chat("demo"), responses: openai.responses("demo") };
  };

  for (const kind of ["chat", "responses"] as const) {
    it(`generateText with a tool completes the loop (${kind} model)`, async () => {
      const calls: string[] = [];
      const result = await generateText({ model: models()[kind], prompt: PROMPT, tools: { get_weather: weatherTool(calls) }, stopWhen: stepCountIs(3) });
      expect(calls).toEqual(["Paris"]);
      expect(result.steps).toHaveLength(2);
      expect(result.text).toBe("get_weather returned: sunny in Paris");
    });

    it(`streamText with a tool completes the loop (${kind} model)`, async () => {
      const calls: string[] = [];
      const result = streamText({ model: models()[kind], prompt: PROMPT, tools: { get_weather: weatherTool(calls) }, stopWhen: stepCountIs(3) });
      let text = "";
      for await (const t of result.textStream) text += t;
      expect(calls).toEqual(["Paris"]);
      expect(text).toBe("get_weather returned: sunny in Paris");
      expect(await result.finishReason).toBe("stop");
    });
  }
});

describe("LangChain", () => {
  it("ChatOpenAI.bindTools: the model calls the tool, the loop sends its result, the model answers", async () => {
    const llm = new ChatOpenAI({ model: "demo", apiKey: "unused", configuration: { baseURL: `${srv.url}/v1` }, maxRetries: 0 });
    const bound = llm.bindTools([
      { type: "function", function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } },
    ]);
    const messages: BaseMessage[] = [new HumanMessage(PROMPT)];
    const first = await bound.invoke(messages);
    expect(first.tool_calls).toHaveLength(1);
    expect(first.tool_calls![0]).toMatchObject({ name: "get_weather", args: { city: "Paris" } });
    messages.push(first, new ToolMessage({ tool_call_id: first.tool_calls![0]!.id!, content: "rain in Paris" }));
    const second = await bound.invoke(messages);
    expect(second.tool_calls ?? []).toHaveLength(0);
    expect(second.content).toBe("get_weather returned: rain in Paris");
  });

  it("streamed (.stream()): the chunks carry the tool call, and the streamed answer follows", async () => {
    // `.stream()`, not `invoke` with `streaming: true`: that combination hangs in this LangChain
    // version against any server (the fake OpenAI upstream too), so it is not what is tested here.
    const llm = new ChatOpenAI({ model: "demo", apiKey: "unused", configuration: { baseURL: `${srv.url}/v1` }, maxRetries: 0 });
    const bound = llm.bindTools([{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }]);
    const messages: BaseMessage[] = [new HumanMessage(PROMPT)];
    let first: AIMessageChunk | undefined;
    for await (const chunk of await bound.stream(messages)) first = first ? first.concat(chunk) : chunk;
    expect(first!.tool_calls![0]).toMatchObject({ name: "get_weather", args: { city: "Paris" } });
    messages.push(first!, new ToolMessage({ tool_call_id: first!.tool_calls![0]!.id!, content: "wind" }));
    let text = "";
    for await (const chunk of await bound.stream(messages)) text += typeof chunk.content === "string" ? chunk.content : "";
    expect(text).toBe("get_weather returned: wind");
  });
});
