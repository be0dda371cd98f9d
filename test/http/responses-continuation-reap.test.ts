/**
 * A Responses continuation answers a turn that waited longer than the orphan grace: the session
 * was reaped while the client ran its tool (or a person thought about an approval), and the
 * continuation (`previous_response_id` + `function_call_output`, or `mcp_approval_response`)
 * reopens it. The response carries the model's real output and usage, streamed with
 * `response.in_progress`, and `GET /v1/responses/{id}` answers the same — not an empty
 * `completed` response ended by the `turn.awaiting` the reopened session announces again.
 * The reap runs on a FakeClock (a 2 s grace, advanced by hand); the clients are the official
 * `openai` client and the OpenAI Agents SDK (`@openai/agents`, a tool slower than the grace).
 */
import OpenAI from "openai";
import { Agent, run, setTracingDisabled, tool } from "@openai/agents";
import { OpenAIResponsesModel } from "@openai/agents-openai";
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/lib/clock.js";
import { eventually } from "../support/sse-client.js";
import { startTestServer, type TestServer } from "../support/start-server.js";

const GRACE_S = 2;
let srv: TestServer;
let clock: FakeClock;
let ai: OpenAI;

beforeAll(async () => {
  clock = new FakeClock(Date.now());
  srv = await startTestServer({
    demoDelayMs: 0,
    clock,
    config: { lifecycle: { orphan_grace_s: GRACE_S }, tools: { policy: { todo: "ask" } } },
  });
  ai = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
afterAll(async () => {
  await srv?.close();
});

const weather: OpenAI.Responses.FunctionTool = {
  type: "function",
  name: "get_weather",
  parameters: { type: "object", properties: { city: { type: "string" } } },
  strict: false,
};

/** Past the grace with nobody watching: the session is reaped (no longer live in this process). */
async function reap(sessionId: string): Promise<void> {
  await clock.advance(GRACE_S * 1000 + 100);
  await eventually(async () => {
    const res = await fetch(`${srv.url}/api/sessions/${sessionId}`);
    const s = (await res.json()) as { state: string };
    return s.state === "idle" || undefined;
  }, 5_000);
}

const sessionOf = (r: OpenAI.Responses.Response) => (r as unknown as { session_id: string }).session_id;

describe("Responses continuations after the session was reaped", () => {
  it("function_call_output: the model's answer and usage, retrievable as such", async () => {
    const first = await ai.responses.create({ model: "demo", input: 'call: get_weather {"city": "Paris"}', tools: [weather] });
    const call = first.output.find((o) => o.type === "function_call") as OpenAI.Responses.ResponseFunctionToolCall;
    await reap(sessionOf(first));

    const second = await ai.responses.create({
      model: "demo",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: "sunny" }],
      tools: [weather],
    });
    expect(second.status).toBe("completed");
    expect(second.output_text).toBe("get_weather returned: sunny");
    expect(second.usage?.total_tokens).toBeGreaterThan(0);
    const got = await ai.responses.retrieve(second.id);
    expect(got.output_text).toBe("get_weather returned: sunny");
    expect(got.usage).toEqual(second.usage);
  });

  it("streamed: created, in_progress, the message, completed", async () => {
    const first = await ai.responses.create({ model: "demo", input: 'call: get_weather {"city": "Rome"}', tools: [weather] });
    const call = first.output.find((o) => o.type === "function_call") as OpenAI.Responses.ResponseFunctionToolCall;
    await reap(sessionOf(first));

    const stream = await ai.responses.create({
      model: "demo",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: "warm" }],
      tools: [weather],
      stream: true,
    });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    const types = events.map((e) => e.type);
    expect(types.slice(0, 2)).toEqual(["response.created", "response.in_progress"]);
    expect(types.at(-1)).toBe("response.completed");
    expect(types).toContain("response.output_text.done");
    const done = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(done.response.output_text ?? done.response.output.map((o) => (o.type === "message" ? o.content.map((c) => (c.type === "output_text" ? c.text : "")).join("") : "")).join("")).toBe("get_weather returned: warm");
    expect(done.response.usage?.total_tokens).toBeGreaterThan(0);
    const seqs = events.map((e) => e.sequence_number);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
  });

  it("mcp_approval_response: the approved call runs and the model answers", async () => {
    const first = await ai.responses.create({ model: "demo", input: 'call: todo {"items": [{"text": "buy milk"}]}' });
    const ask = first.output.find((o) => o.type === "mcp_approval_request") as OpenAI.Responses.ResponseOutputItem.McpApprovalRequest;
    expect(ask).toBeDefined();
    await reap(sessionOf(first));

    const second = await ai.responses.create({
      model: "demo",
      previous_response_id: first.id,
      input: [{ type: "mcp_approval_response", approval_request_id: ask.id, approve: true }],
    });
    expect(second.status).toBe("completed");
    expect(second.output_text).toMatch(/^todo returned: /);
    expect(second.usage?.total_tokens).toBeGreaterThan(0);
    expect((await ai.responses.retrieve(second.id)).output_text).toBe(second.output_text);
  });

  it("the OpenAI Agents SDK: a tool slower than the grace, on a server-managed conversation", async () => {
    setTracingDisabled(true);
    const client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "unused", maxRetries: 0 });
    // The SDK bundles its own `openai`; the client is the same API.
    const model = new OpenAIResponsesModel(client as never, "demo");
    let sessionId = "";
    const getWeather = tool({
      name: "get_weather",
      description: "Weather of a city",
      parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => {
        await reap(sessionId);
        return `snow in ${city}`;
      },
    });
    const agent = new Agent({ name: "weather", instructions: "Answer briefly.", model, tools: [getWeather] });
    const hello = await run(agent, "hello");
    sessionId = sessionOf((await ai.responses.retrieve(hello.lastResponseId!)) as OpenAI.Responses.Response);
    const result = await run(agent, 'call: get_weather {"city": "Oslo"}', { previousResponseId: hello.lastResponseId });
    expect(result.finalOutput).toBe("get_weather returned: snow in Oslo");
  });
});
