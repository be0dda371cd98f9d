/**
 * The frames → UI message chunks translation on recorded frame logs: a replay takes each text from
 * the log's whole text (never from deltas the ring may have dropped), continues live deltas after
 * a snapshot without repeating it, and never hands the client a call it answered already as one to run.
 */
import { describe, expect, it } from "vitest";
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { UiMessageChunker } from "../../src/gateway/ui/ai-sdk-chunks.js";
import type { Frame } from "../../src/protocol/index.js";

const T = "turn_1";
let seq = 0;
const f = (type: string, payload: unknown, turn = T): Frame => ({ type, session_id: "s", seq: ++seq, epoch: "e", ts: 0, turn_id: turn, payload });

async function messageOf(chunks: UIMessageChunk[]): Promise<UIMessage> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(c) {
      for (const x of chunks) c.enqueue(x);
      c.close();
    },
  });
  let last: UIMessage | undefined;
  for await (const m of readUIMessageStream({ stream })) last = m;
  return last!;
}

const text = (m: UIMessage) => m.parts.filter((p) => p.type === "text").map((p) => (p as { text: string }).text).join("");

describe("UiMessageChunker", () => {
  it("a replay takes the text from message.complete, not from the deltas it still has", async () => {
    const c = new UiMessageChunker({ turnId: T });
    const frames = [
      f("turn.start", { turn_id: T }),
      f("message.start", { message_id: "m1", role: "assistant" }),
      // The ring dropped "1 2 ": only a later delta is left in the log.
      f("message.delta", { message_id: "m1", text: " 3" }),
      f("message.complete", { message_id: "m1", role: "assistant", content: "1 2 3", status: "complete" }),
      f("turn.complete", { turn_id: T, status: "complete" }),
    ];
    const chunks = [...c.start(), ...c.catchup(frames, [])];
    expect(chunks.filter((x) => x.type === "text-delta").map((x) => (x as { delta: string }).delta)).toEqual(["1 2 3"]);
    expect(text(await messageOf(chunks))).toBe("1 2 3");
  });

  it("a streaming message's snapshot, then live deltas after it: the text once", async () => {
    const c = new UiMessageChunker({ turnId: T });
    const start = f("message.start", { message_id: "m1", role: "assistant" });
    const chunks = [...c.start(), ...c.catchup([f("turn.start", { turn_id: T }), start], [{ message_id: "m1", role: "assistant", text: "1 2", reasoning: "", turn_id: T, as_of_seq: seq }])];
    chunks.push(...c.frame(f("message.delta", { message_id: "m1", text: " 3" })));
    chunks.push(...c.frame(f("message.complete", { message_id: "m1", role: "assistant", content: "1 2 3", status: "complete" })));
    chunks.push(...c.frame(f("turn.complete", { turn_id: T, status: "complete" })));
    expect(text(await messageOf(chunks))).toBe("1 2 3");
    expect(chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
  });

  it("a client tool the replay shows answered is provider-executed (onToolCall does not run it again); an open one is not", () => {
    const c = new UiMessageChunker({ turnId: T });
    const call = (id: string) => ({ id, name: "get_weather", arguments: '{"city":"Paris"}' });
    const frames = [
      f("turn.start", { turn_id: T }),
      f("message.start", { message_id: "m1", role: "assistant" }),
      f("message.complete", { message_id: "m1", role: "assistant", content: "", status: "complete", tool_calls: [call("c1")] }),
      f("request.opened", { request_id: "r1", kind: "client_tool", call_id: "c1", tool: "get_weather", args: { city: "Paris" } }),
      f("request.resolved", { request_id: "r1", choice: "output", by: "alice" }),
      f("tool.start", { call_id: "c1", name: "get_weather", args: { city: "Paris" } }),
      f("tool.complete", { call_id: "c1", name: "get_weather", result: "sunny", duration_ms: 1 }),
      f("message.start", { message_id: "m2", role: "assistant" }),
      f("message.complete", { message_id: "m2", role: "assistant", content: "", status: "complete", tool_calls: [call("c2")] }),
      f("request.opened", { request_id: "r2", kind: "client_tool", call_id: "c2", tool: "get_weather", args: { city: "Paris" } }),
      f("turn.awaiting", { turn_id: T, request_ids: ["r2"] }),
    ];
    const chunks = c.catchup(frames, []);
    const available = chunks.filter((x) => x.type === "tool-input-available") as Array<{ toolCallId: string; providerExecuted?: boolean }>;
    expect(available.map((x) => [x.toolCallId, x.providerExecuted ?? false])).toEqual([
      ["c1", true],
      ["c2", false],
    ]);
    expect(chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "tool-calls" });
  });
});
