import { describe, expect, it } from "vitest";
import { DemoProvider } from "../../src/agent/demo-provider.js";
import { ProviderError, type ChatMessage, type ProviderChunk } from "../../src/agent/provider.js";
import { FakeClock } from "../../src/lib/clock.js";

function run(provider: DemoProvider, messages: ChatMessage[], signal = new AbortController().signal) {
  return provider.stream({ model: "demo", messages, signal });
}

async function collect(stream: AsyncIterable<ProviderChunk>): Promise<ProviderChunk[]> {
  const out: ProviderChunk[] = [];
  for await (const c of stream) out.push(c);
  return out;
}

const texts = (chunks: ProviderChunk[]) => chunks.flatMap((c) => (c.type === "text" ? [c.text] : []));
const user = (content: string): ChatMessage => ({ role: "user", content });

describe("DemoProvider", () => {
  it("is labelled demo", () => {
    const p = new DemoProvider({ clock: new FakeClock() });
    expect([p.name, p.kind, p.defaultModel]).toEqual(["demo", "demo", "demo"]);
  });

  it("counts to N one chunk per number, then usage and finish", async () => {
    const p = new DemoProvider({ clock: new FakeClock(), delayMs: 0 });
    const chunks = await collect(run(p, [user("  Count to 5 ")]));
    expect(texts(chunks)).toEqual(["1", " 2", " 3", " 4", " 5"]);
    expect(chunks.at(-2)).toEqual({
      type: "usage",
      // ceil(chars / 4): 13 prompt chars (untrimmed), 9 output chars.
      usage: { prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 },
    });
    expect(chunks.at(-1)).toEqual({ type: "finish", reason: "stop" });
  });

  it("paces chunks with the injected clock", async () => {
    const clock = new FakeClock();
    const p = new DemoProvider({ clock, delayMs: 100 });
    const got: string[] = [];
    const done = (async () => {
      for await (const c of run(p, [user("count to 3")])) if (c.type === "text") got.push(c.text);
    })();
    await clock.advance(0);
    expect(got).toEqual(["1"]);
    await clock.advance(100);
    expect(got).toEqual(["1", " 2"]);
    await clock.advance(100);
    await done;
    expect(got).toEqual(["1", " 2", " 3"]);
  });

  it("stops at once when aborted while pacing, rethrowing the reason", async () => {
    const clock = new FakeClock();
    const p = new DemoProvider({ clock, delayMs: 1000 });
    const abort = new AbortController();
    const reason = new Error("stop");
    const got: string[] = [];
    const done = (async () => {
      for await (const c of run(p, [user("count to 100")], abort.signal)) if (c.type === "text") got.push(c.text);
    })();
    await clock.advance(0);
    abort.abort(reason);
    await expect(done).rejects.toBe(reason);
    expect(got).toEqual(["1"]);
  });

  it("calls the todo tool first, then confirms once the tool result is in", async () => {
    const p = new DemoProvider({ clock: new FakeClock(), delayMs: 0 });
    const first = await collect(run(p, [user("todo: write code; test it ;ship")]));
    const call = first.find((c) => c.type === "tool_calls");
    expect(call).toBeDefined();
    if (call?.type !== "tool_calls") throw new Error("unreachable");
    expect(call.calls).toHaveLength(1);
    expect(call.calls[0]!.name).toBe("todo");
    expect(JSON.parse(call.calls[0]!.arguments)).toEqual({
      items: [
        { content: "write code", status: "pending" },
        { content: "test it", status: "pending" },
        { content: "ship", status: "pending" },
      ],
    });
    expect(first.at(-1)).toEqual({ type: "finish", reason: "tool_calls" });

    const second = await collect(
      run(p, [
        user("TODO: write code; test it; ship"),
        { role: "assistant", content: null, tool_calls: call.calls },
        { role: "tool", content: '{"revision":1}', tool_call_id: call.calls[0]!.id },
      ]),
    );
    expect(second.some((c) => c.type === "tool_calls")).toBe(false);
    expect(texts(second).join("")).toBe("Todo list updated: 3 items.");
    expect(texts(second).length).toBeGreaterThan(1);
  });

  it("fails with the asked layer and code, retryable per code", async () => {
    const p = new DemoProvider({ clock: new FakeClock(), delayMs: 0 });
    const info = async (cmd: string) => {
      try {
        await collect(run(p, [user(cmd)]));
      } catch (err) {
        expect(err).toBeInstanceOf(ProviderError);
        return (err as ProviderError).info;
      }
      throw new Error("expected a failure");
    };
    expect(await info("fail: provider/rate_limited")).toEqual({
      layer: "provider",
      code: "rate_limited",
      retryable: true,
      message: "demo provider: simulated failure provider/rate_limited",
    });
    expect(await info("Fail: auth/unauthorized")).toMatchObject({ layer: "auth", code: "unauthorized", retryable: false });
    expect(await info("fail: nonsense/timeout")).toMatchObject({ layer: "provider", code: "timeout", retryable: true });
  });

  it("answers anything else by quoting the prompt, word by word", async () => {
    const p = new DemoProvider({ clock: new FakeClock(), delayMs: 0 });
    const chunks = await collect(run(p, [user("hello"), { role: "assistant", content: "x" }, user(" What is Tether? ")]));
    const parts = texts(chunks);
    expect(parts.join("")).toBe(
      `You said: "What is Tether?". This is Tether's built-in demo provider; configure TETHER_PROVIDER_URL to talk to a real model.`,
    );
    expect(parts.length).toBeGreaterThan(10);
    // Deterministic: the same conversation streams the same chunks.
    expect(texts(await collect(run(p, [user("What is Tether?")])))).toEqual(parts);
  });
});

describe("DemoProvider call: cue", () => {
  const offered = ["notes__echo", "todo"].map((name) => ({ name, description: name, parameters: { type: "object" } }));
  const stream = (p: DemoProvider, messages: ChatMessage[]) => p.stream({ model: "demo", messages, tools: offered, signal: new AbortController().signal });

  it("calls the tools it names (several in one step), with their JSON arguments, strings with ; and } intact", async () => {
    const p = new DemoProvider({ clock: new FakeClock(), delayMs: 0 });
    const chunks = await collect(stream(p, [user('call: notes__echo {"text": "a; b } c"}; todo {"items": []}')]));
    const calls = chunks.find((c) => c.type === "tool_calls");
    expect(calls).toEqual({
      type: "tool_calls",
      calls: [
        { id: "call_demo_0_0", name: "notes__echo", arguments: '{"text": "a; b } c"}' },
        { id: "call_demo_0_1", name: "todo", arguments: '{"items": []}' },
      ],
    });
    expect(chunks.at(-1)).toEqual({ type: "finish", reason: "tool_calls" });
  });

  it("after the results, replies quoting each one; names a tool the turn does not offer", async () => {
    const p = new DemoProvider({ clock: new FakeClock(), delayMs: 0 });
    const history: ChatMessage[] = [
      user("call: notes__echo {\"text\":\"x\"}; files__gone; todo"),
      { role: "assistant", content: null, tool_calls: [{ id: "call_demo_0_0", name: "notes__echo", arguments: "{}" }, { id: "call_demo_0_2", name: "todo", arguments: "{}" }] },
      { role: "tool", tool_call_id: "call_demo_0_0", content: "x" },
      // Ids follow the cue's positions: the missing tool keeps its index.
      { role: "tool", tool_call_id: "call_demo_0_2", content: '{"revision":1}' },
    ];
    const text = texts(await collect(stream(p, history))).join("");
    expect(text).toBe('notes__echo returned: x\ntodo returned: {"revision":1}\nNot available in this turn: files__gone.');
  });

  it("a call of nothing offered answers at once; an unreadable cue says how to write one", async () => {
    const p = new DemoProvider({ clock: new FakeClock(), delayMs: 0 });
    expect(texts(await collect(stream(p, [user("call: nope__x {}")]))).join("")).toBe("Not available in this turn: nope__x.");
    expect(texts(await collect(stream(p, [user("call: {oops}")]))).join("")).toMatch(/call: TOOL \{json\}/);
    // Arguments that are not JSON are passed on as they are: the gateway reports them as invalid.
    const bad = await collect(stream(p, [user("call: notes__echo {not json}")]));
    expect(bad.find((c) => c.type === "tool_calls")).toMatchObject({ calls: [{ arguments: "{not json}" }] });
  });
});
