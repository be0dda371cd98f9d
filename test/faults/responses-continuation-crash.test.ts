/**
 * A Responses continuation is a durable wait, with real `tether serve` processes and a scripted
 * OpenAI-compatible upstream: the function_call (or mcp_approval_request) response ends, the
 * gateway is killed (SIGKILL) or stopped (SIGTERM), a new process opens the same store, and the
 * continuation — `previous_response_id` with `function_call_output` or `mcp_approval_response`,
 * sent by the official `openai` client — answers with the model's real output and usage, rebuilt
 * from the session's log; `GET /v1/responses/{id}` answers the same.
 */
import OpenAI from "openai";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { tempDbPath } from "../support/temp-db.js";

const running: SpawnedGateway[] = [];
const upstreams: FakeOpenAI[] = [];
afterAll(async () => {
  for (const g of running) await g.kill("SIGKILL");
  for (const u of upstreams) await u.close();
});

const MODEL = "m1";
const USAGE = { prompt_tokens: 21, completion_tokens: 4, total_tokens: 25 };

/** A config file asking before the built-in `todo` tool runs (an approval every call). */
function askTodoConfig(): string {
  const path = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
  writeFileSync(path, "tools:\n  policy:\n    todo: ask\n");
  return path;
}

async function upstream(): Promise<FakeOpenAI> {
  const u = await startFakeOpenAI();
  upstreams.push(u);
  return u;
}

async function gateway(db: string, up: FakeOpenAI, env: Record<string, string> = {}): Promise<{ g: SpawnedGateway; ai: OpenAI }> {
  const g = await spawnGateway(["--port", "0", "--db", db], { TETHER_PROVIDER_URL: up.url, TETHER_MODEL: MODEL, ...env });
  running.push(g);
  return { g, ai: new OpenAI({ baseURL: `${g.url}/v1`, apiKey: "unused", maxRetries: 0 }) };
}

const weather: OpenAI.Responses.FunctionTool = {
  type: "function",
  name: "get_weather",
  parameters: { type: "object", properties: { city: { type: "string" } } },
  strict: false,
};

async function functionCallResponse(ai: OpenAI, up: FakeOpenAI): Promise<{ first: OpenAI.Responses.Response; callId: string }> {
  up.script(reply.toolCalls([{ id: "call_w1", name: "get_weather", arguments: '{"city":"Oslo"}' }], { usage: { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 } }));
  const first = await ai.responses.create({ model: MODEL, input: "What is the weather in Oslo?", tools: [weather] });
  const call = first.output.find((o) => o.type === "function_call") as OpenAI.Responses.ResponseFunctionToolCall;
  expect(call.call_id).toBe("call_w1");
  return { first, callId: call.call_id };
}

describe("Responses continuations across a process's end", () => {
  for (const signal of ["SIGKILL", "SIGTERM"] as const) {
    it(`function_call_output after ${signal}: the model's answer and usage; GET answers the same`, async () => {
      const up = await upstream();
      const db = tempDbPath();
      const one = await gateway(db, up);
      const { first, callId } = await functionCallResponse(one.ai, up);
      await one.g.kill(signal);

      const two = await gateway(db, up);
      up.script(reply.text(["Cold ", "in Oslo."], { usage: USAGE }));
      const second = await two.ai.responses.create({
        model: MODEL,
        previous_response_id: first.id,
        input: [{ type: "function_call_output", call_id: callId, output: "-5 C" }],
        tools: [weather],
      });
      expect(second.status).toBe("completed");
      expect(second.output_text).toBe("Cold in Oslo.");
      expect(second.usage).toMatchObject({ input_tokens: 21, output_tokens: 4, total_tokens: 25 });
      // The upstream got the tool result with the conversation.
      const sent = up.requests.at(-1)!.body.messages as Array<{ role: string; content: string; tool_call_id?: string }>;
      expect(sent.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_w1", content: "-5 C" });
      const got = await two.ai.responses.retrieve(second.id);
      expect(got.output_text).toBe("Cold in Oslo.");
      expect(got.usage).toEqual(second.usage);
    });
  }

  it("streamed after SIGKILL: created, in_progress, the answer, completed with usage", async () => {
    const up = await upstream();
    const db = tempDbPath();
    const one = await gateway(db, up);
    const { first, callId } = await functionCallResponse(one.ai, up);
    await one.g.kill("SIGKILL");

    const two = await gateway(db, up);
    up.script(reply.text(["Still ", "cold."], { usage: USAGE }));
    const stream = await two.ai.responses.create({
      model: MODEL,
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: callId, output: "-6 C" }],
      tools: [weather],
      stream: true,
    });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    expect(events.slice(0, 2).map((e) => e.type)).toEqual(["response.created", "response.in_progress"]);
    const end = events.at(-1)!;
    expect(end.type).toBe("response.completed");
    const done = (end as OpenAI.Responses.ResponseCompletedEvent).response;
    expect(done.output.flatMap((o) => (o.type === "message" ? o.content : [])).map((c) => (c.type === "output_text" ? c.text : ""))).toEqual(["Still cold."]);
    expect(done.usage?.total_tokens).toBe(25);
    expect((await two.ai.responses.retrieve(done.id)).output_text).toBe("Still cold.");
  });

  it("mcp_approval_response after SIGKILL: the approved call runs, the model answers", async () => {
    const up = await upstream();
    const db = tempDbPath();
    const env = { TETHER_CONFIG: askTodoConfig() };
    const one = await gateway(db, up, env);
    up.script(reply.toolCalls([{ id: "call_t1", name: "todo", arguments: '{"items":[{"text":"pack"}]}' }]));
    const first = await one.ai.responses.create({ model: MODEL, input: "Plan the trip" });
    const ask = first.output.find((o) => o.type === "mcp_approval_request") as OpenAI.Responses.ResponseOutputItem.McpApprovalRequest;
    expect(ask?.name).toBe("todo");
    await one.g.kill("SIGKILL");

    const two = await gateway(db, up, env);
    up.script(reply.text(["Packed."], { usage: USAGE }));
    const second = await two.ai.responses.create({
      model: MODEL,
      previous_response_id: first.id,
      input: [{ type: "mcp_approval_response", approval_request_id: ask.id, approve: true }],
    });
    expect(second.status).toBe("completed");
    expect(second.output_text).toBe("Packed.");
    expect(second.usage?.total_tokens).toBe(25);
    const sent = up.requests.at(-1)!.body.messages as Array<{ role: string; tool_call_id?: string }>;
    expect(sent.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_t1" });
    expect((await two.ai.responses.retrieve(second.id)).output_text).toBe("Packed.");
  });
});
