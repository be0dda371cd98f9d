/**
 * Client tool round trip: what parking a turn on a client's tool call costs. The official `openai`
 * client drives `/v1/chat/completions` two ways in one run, each a pair of requests in one session
 * (`X-Session-Id` on the second):
 *
 * - with a client tool: the first request's model calls `get_weather` (the demo provider's `call:`
 *   cue), the completion ends with `tool_calls` and the turn parks on a durable `client_tool`
 *   request; the second sends the tool message, which answers the request, and the parked turn
 *   resumes and answers;
 * - baseline: two plain turns (a prompt each), the same number of requests, sessions and model
 *   calls, and no tool.
 *
 * Rounds alternate (client tool, baseline) after a warm-up; the figures are medians of the per-pair
 * time over the rounds.
 */
import OpenAI from "openai";
import { median, progress } from "./stats.js";
import { startTether } from "./tether-server.js";

export interface ClientToolsResult {
  pairsPerRound: number;
  rounds: number;
  /** Per pair of requests, µs: medians over the rounds. */
  toolUs: number;
  baselineUs: number;
  ratio: number;
}

const tools: OpenAI.Chat.ChatCompletionTool[] = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];

export async function benchClientTools(opts: { pairs: number; rounds: number; warmup: number }): Promise<ClientToolsResult> {
  const tether = await startTether();
  const ai = new OpenAI({ baseURL: `${tether.server.url}/v1`, apiKey: "unused", maxRetries: 0 });

  const withTool = async (): Promise<void> => {
    const first = await ai.chat.completions.create({ model: "demo", messages: [{ role: "user", content: 'call: get_weather {"city": "Oslo"}' }], tools }).withResponse();
    const call = first.data.choices[0]!.message.tool_calls?.[0];
    if (!call) throw new Error("the model did not call the client tool");
    const next = await ai.chat.completions.create(
      { model: "demo", messages: [{ role: "tool", tool_call_id: call.id, content: "cold" }], tools },
      { headers: { "X-Session-Id": first.response.headers.get("x-session-id")! } },
    );
    if (next.choices[0]!.message.content !== "get_weather returned: cold") throw new Error(`unexpected answer: ${next.choices[0]!.message.content}`);
  };
  const baseline = async (): Promise<void> => {
    const first = await ai.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "hello" }], tools }).withResponse();
    await ai.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "again" }], tools }, { headers: { "X-Session-Id": first.response.headers.get("x-session-id")! } });
  };
  const timed = async (fn: () => Promise<void>): Promise<number> => {
    const t = performance.now();
    for (let i = 0; i < opts.pairs; i++) await fn();
    return ((performance.now() - t) * 1000) / opts.pairs;
  };

  try {
    for (let i = 0; i < opts.warmup; i++) {
      await withTool();
      await baseline();
    }
    const toolSamples: number[] = [];
    const baseSamples: number[] = [];
    for (let r = 0; r < opts.rounds; r++) {
      toolSamples.push(await timed(withTool));
      baseSamples.push(await timed(baseline));
      progress("clienttools", `round ${r + 1}/${opts.rounds}: ${(toolSamples.at(-1)! / 1000).toFixed(2)} ms vs ${(baseSamples.at(-1)! / 1000).toFixed(2)} ms per pair`);
    }
    const toolUs = median(toolSamples);
    const baselineUs = median(baseSamples);
    return { pairsPerRound: opts.pairs, rounds: opts.rounds, toolUs, baselineUs, ratio: toolUs / baselineUs };
  } finally {
    await tether.close();
  }
}
