/**
 * A crash while the model answers a tool result (issue #28, item 2), with real `tether serve`
 * processes, a scripted OpenAI-compatible upstream and the official `openai` client: the client
 * sends its tool output (a chat completion's tool message with `X-Session-Id`, or a Response's
 * `function_call_output` with `previous_response_id`) with an `Idempotency-Key`; the gateway is
 * SIGKILLed while the upstream is answering it (mid-stream, held by the script). The same request
 * retried with the same key after the restart resumes the turn from the stored tool result — the
 * call is answered, only the model call is made again — and answers the model's reply; never a 400
 * blaming the client ("No tool call … is pending").
 */
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { tempDbPath } from "../support/temp-db.js";

const running: SpawnedGateway[] = [];
const upstreams: FakeOpenAI[] = [];
const holds: Array<() => void> = [];
afterAll(async () => {
  for (const release of holds) release();
  for (const g of running) await g.kill("SIGKILL");
  for (const u of upstreams) await u.close();
});

const MODEL = "m1";
const USAGE = { prompt_tokens: 30, completion_tokens: 5, total_tokens: 35 };

async function upstream(): Promise<FakeOpenAI> {
  const u = await startFakeOpenAI();
  upstreams.push(u);
  return u;
}

async function gateway(db: string, up: FakeOpenAI, port = "0"): Promise<{ g: SpawnedGateway; ai: OpenAI }> {
  const g = await spawnGateway(["--port", port, "--db", db], { TETHER_PROVIDER_URL: up.url, TETHER_MODEL: MODEL });
  running.push(g);
  return { g, ai: new OpenAI({ baseURL: `${g.url}/v1`, apiKey: "unused", maxRetries: 0 }) };
}

/** The upstream starts answering the next call, then holds it: resolves once it is being answered. */
function holdNextAnswer(up: FakeOpenAI): Promise<void> {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  holds.push(release);
  return new Promise<void>((reached) => {
    up.script(
      reply.stream([
        { type: "delta", delta: { role: "assistant", content: "" } },
        { type: "delta", delta: { content: "Half an ans" } },
        { type: "wait", until: held, reached },
        { type: "drop" },
      ]),
    );
  });
}

const weather = { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } };
const KEY = "retry-after-crash-1";

describe("a crash while the model answers a tool result", () => {
  it("chat completions: the retry with the same Idempotency-Key answers the model's reply", async () => {
    const up = await upstream();
    const db = tempDbPath();
    const one = await gateway(db, up);
    const port = new URL(one.g.url).port;
    const tools: OpenAI.Chat.ChatCompletionTool[] = [{ type: "function", function: weather }];
    up.script(reply.toolCalls([{ id: "call_c1", name: "get_weather", arguments: '{"city":"Oslo"}' }]));
    const made = await one.ai.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "Weather in Oslo?" }], tools }).withResponse();
    const sessionId = made.response.headers.get("x-session-id")!;
    expect(made.data.choices[0]!.message.tool_calls![0]!.id).toBe("call_c1");

    const answering = holdNextAnswer(up);
    const body: OpenAI.Chat.ChatCompletionCreateParamsNonStreaming = { model: MODEL, messages: [{ role: "tool", tool_call_id: "call_c1", content: "warm" }], tools };
    const headers = { "X-Session-Id": sessionId, "Idempotency-Key": KEY };
    const cut = one.ai.chat.completions.create(body, { headers }).then(
      () => "answered",
      () => "cut",
    );
    await answering;
    await one.g.kill("SIGKILL");
    expect(await cut).toBe("cut");

    const two = await gateway(db, up, port);
    up.script(reply.text(["Warm ", "in Oslo."], { usage: USAGE }));
    const calls = up.requests.length;
    const again = await two.ai.chat.completions.create(body, { headers });
    expect(again.choices[0]!.message.content).toBe("Warm in Oslo.");
    expect(again.choices[0]!.finish_reason).toBe("stop");
    // One model call after the restart, and it carried the stored tool result (not run again).
    expect(up.requests.length).toBe(calls + 1);
    const sent = up.requests.at(-1)!.body.messages as Array<{ role: string; content: string; tool_call_id?: string }>;
    expect(sent.filter((m) => m.role === "tool")).toEqual([expect.objectContaining({ tool_call_id: "call_c1", content: "warm" })]);
    // The same key once more: the stored answer, no new model call.
    const third = await two.ai.chat.completions.create(body, { headers });
    expect(third.choices[0]!.message.content).toBe("Warm in Oslo.");
    expect(up.requests.length).toBe(calls + 1);
  });

  it("responses: the retry of a function_call_output with the same Idempotency-Key answers the model's reply", async () => {
    const up = await upstream();
    const db = tempDbPath();
    const one = await gateway(db, up);
    const port = new URL(one.g.url).port;
    const tool: OpenAI.Responses.FunctionTool = { type: "function", ...weather, strict: false };
    up.script(reply.toolCalls([{ id: "call_r1", name: "get_weather", arguments: '{"city":"Oslo"}' }]));
    const first = await one.ai.responses.create({ model: MODEL, input: "Weather in Oslo?", tools: [tool] });
    expect(first.output.some((o) => o.type === "function_call" && o.call_id === "call_r1")).toBe(true);

    const answering = holdNextAnswer(up);
    const body: OpenAI.Responses.ResponseCreateParamsNonStreaming = {
      model: MODEL,
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: "call_r1", output: "-5 C" }],
      tools: [tool],
    };
    const headers = { "Idempotency-Key": KEY };
    const cut = one.ai.responses.create(body, { headers }).then(
      () => "answered",
      () => "cut",
    );
    await answering;
    await one.g.kill("SIGKILL");
    expect(await cut).toBe("cut");

    const two = await gateway(db, up, port);
    up.script(reply.text(["Cold ", "in Oslo."], { usage: USAGE }));
    const calls = up.requests.length;
    const again = await two.ai.responses.create(body, { headers });
    expect(again.status).toBe("completed");
    expect(again.output_text).toBe("Cold in Oslo.");
    expect(again.usage?.total_tokens).toBe(35);
    expect(up.requests.length).toBe(calls + 1);
    const sent = up.requests.at(-1)!.body.messages as Array<{ role: string; content: string; tool_call_id?: string }>;
    expect(sent.filter((m) => m.role === "tool")).toEqual([expect.objectContaining({ tool_call_id: "call_r1", content: "-5 C" })]);
    expect((await two.ai.responses.retrieve(again.id)).output_text).toBe("Cold in Oslo.");
  });
});
