/**
 * `POST /ag-ui` driven by AG-UI's own client, `@ag-ui/client`'s HttpAgent, unchanged (its event
 * verifier on): a streamed reply, a server tool with the todo in STATE_SNAPSHOT, a frontend tool
 * answered by the next run's tool message, an approval as an interrupt answered by the next run's
 * `resume`, an error as RUN_ERROR with Tether's classification, a reconnect with the same run id
 * that replays without running twice — and the attackers: another principal's thread, a foreign
 * Origin, fields the endpoint does not take.
 */
import { HttpAgent } from "@ag-ui/client";
import { EventType, type BaseEvent, type Message } from "@ag-ui/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { KEY_A, KEY_B, auth, startUiProtocolServer } from "../support/ui-protocol-server.js";

let srv: TestServer;
beforeAll(async () => {
  srv = await startUiProtocolServer();
});
afterAll(async () => {
  await srv?.close();
});

let n = 0;
const threadId = () => `thread-${process.pid}-${++n}`;

function agentOf(thread: string, o: { url?: string; key?: string; path?: string } = {}): HttpAgent {
  return new HttpAgent({ url: `${o.url ?? srv.url}${o.path ?? "/ag-ui"}`, headers: o.key === "" ? {} : auth(o.key ?? KEY_A), threadId: thread });
}

function say(agent: HttpAgent, text: string): void {
  agent.addMessage({ id: `u-${++n}`, role: "user", content: text });
}

/** Runs the agent, recording every event it applied. */
async function run(agent: HttpAgent, params: Parameters<HttpAgent["runAgent"]>[0] = {}): Promise<{ events: BaseEvent[]; error?: Error }> {
  const events: BaseEvent[] = [];
  try {
    await agent.runAgent(params, { onEvent: ({ event }) => void events.push(event) });
    return { events };
  } catch (error) {
    return { events, error: error as Error };
  }
}

const assistantText = (messages: readonly Message[]) =>
  messages
    .filter((m) => m.role === "assistant")
    .map((m) => (m as { content?: string }).content ?? "")
    .join("");

async function storedAssistant(thread: string, key = KEY_A, profile = "default") {
  const sessions = (await (await fetch(`${srv.url}/api/sessions?include_hidden=true&profile=${profile}`, { headers: { ...auth(key), "X-Tether-Profile": profile } })).json()) as { sessions: Array<{ session_id: string }> };
  for (const s of sessions.sessions) {
    if (s.session_id === thread) return messagesOf(s.session_id, key, profile);
  }
  return [];
  async function messagesOf(id: string, k: string, p: string) {
    const page = (await (await fetch(`${srv.url}/api/sessions/${id}/messages`, { headers: { ...auth(k), "X-Tether-Profile": p } })).json()) as { messages: Array<{ role: string; content: string }> };
    return page.messages.filter((m) => m.role === "assistant");
  }
}

describe("POST /ag-ui with @ag-ui/client's HttpAgent", () => {
  it("streams a reply: RUN_STARTED, TEXT_MESSAGE_START/CONTENT/END, RUN_FINISHED; the text is the stored one", async () => {
    const agent = agentOf(threadId());
    say(agent, "count to 8");
    const { events, error } = await run(agent);
    expect(error).toBeUndefined();
    const types = events.map((e) => e.type);
    expect(types[0]).toBe(EventType.RUN_STARTED);
    expect(types).toContain(EventType.STATE_SNAPSHOT);
    expect(types.filter((t) => t === EventType.TEXT_MESSAGE_CONTENT).length).toBe(8);
    expect(types.at(-1)).toBe(EventType.RUN_FINISHED);
    expect(events.at(-1)).toMatchObject({ outcome: { type: "success" } });
    expect(assistantText(agent.messages)).toBe("1 2 3 4 5 6 7 8");
  });

  it("a thread continues its session: the history is the store's; the thread id is its session key", async () => {
    const thread = threadId();
    const agent = agentOf(thread);
    say(agent, "count to 2");
    await run(agent);
    const fresh = agentOf(thread);
    say(fresh, "recall");
    await run(fresh);
    expect(assistantText(fresh.messages)).toContain("count to 2");
  });

  it("a server tool: TOOL_CALL_START/ARGS/END/RESULT; the todo is in STATE_SNAPSHOT", async () => {
    const agent = agentOf(threadId());
    say(agent, "todo: pack; leave");
    const { events } = await run(agent);
    const types = events.map((e) => e.type);
    for (const t of [EventType.TOOL_CALL_START, EventType.TOOL_CALL_ARGS, EventType.TOOL_CALL_END, EventType.TOOL_CALL_RESULT]) expect(types).toContain(t);
    expect(agent.state).toMatchObject({ todo: { items: [{ content: "pack" }, { content: "leave" }] } });
    const call = agent.messages.find((m) => m.role === "assistant" && m.toolCalls?.length) as { toolCalls: Array<{ function: { name: string } }> };
    expect(call.toolCalls[0]!.function.name).toBe("todo");
    expect(agent.messages.some((m) => m.role === "tool")).toBe(true);
  });

  it("a frontend tool: the run ends with it pending; the next run's tool message answers it and the turn goes on", async () => {
    const agent = agentOf(threadId());
    const tools = [{ name: "get_time", description: "The time", parameters: { type: "object", properties: { tz: { type: "string" } } } }];
    say(agent, 'call: get_time {"tz": "UTC"}');
    const first = await run(agent, { tools });
    expect(first.events.at(-1)).toMatchObject({ type: EventType.RUN_FINISHED, outcome: { type: "success" } });
    const pending = (first.events.at(-1) as unknown as { outcome: { pendingToolCallIds: string[] } }).outcome.pendingToolCallIds;
    expect(pending).toHaveLength(1);
    agent.addMessage({ id: `t-${++n}`, role: "tool", toolCallId: pending[0]!, content: "12:00" });
    const second = await run(agent, { tools });
    expect(second.error).toBeUndefined();
    expect(second.events.at(-1)).toMatchObject({ type: EventType.RUN_FINISHED, outcome: { type: "success" } });
    expect(assistantText(agent.messages)).toContain("get_time returned: 12:00");
  });

  it("an approval ends the run with an interrupt; the next run's resume answers it and the tool runs", async () => {
    const agent = agentOf(threadId(), { path: "/ag-ui/asks" });
    say(agent, "todo: ship it");
    const first = await run(agent);
    const finished = first.events.at(-1) as unknown as { type: string; outcome: { type: string; interrupts: Array<{ id: string; toolCallId: string; reason: string }> } };
    expect(finished).toMatchObject({ type: EventType.RUN_FINISHED, outcome: { type: "interrupt" } });
    const interrupt = finished.outcome.interrupts[0]!;
    expect(interrupt.reason).toBe("tool_approval");
    expect(agent.state).toMatchObject({ open_requests: [{ request_id: interrupt.id, kind: "approval" }] });
    const second = await run(agent, { resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }] });
    expect(second.error).toBeUndefined();
    expect(second.events.at(-1)).toMatchObject({ type: EventType.RUN_FINISHED, outcome: { type: "success" } });
    expect(agent.state).toMatchObject({ todo: { items: [{ content: "ship it" }] }, open_requests: [] });
  });

  it("a provider error is RUN_ERROR with Tether's layer, code and retryable", async () => {
    const agent = agentOf(threadId());
    say(agent, "fail: provider/rate_limited");
    const { events } = await run(agent);
    const err = events.find((e) => e.type === EventType.RUN_ERROR) as unknown as { code: string; message: string; metadata: { tether: unknown } } | undefined;
    expect(err).toMatchObject({ code: "rate_limited", metadata: { tether: { layer: "provider", code: "rate_limited", retryable: true } } });
    expect(events.at(-1)!.type).toBe(EventType.RUN_ERROR);
  });

  it("a second POST of the same run after a dropped connection replays it (MESSAGES_SNAPSHOT) without running it twice", async () => {
    const slow = await startTestServer({ demoDelayMs: 10 });
    try {
      const thread = threadId();
      const agent = new HttpAgent({ url: `${slow.url}/ag-ui`, threadId: thread });
      say(agent, "count to 60");
      const runId = `run-${++n}`;
      let contents = 0;
      const dropped = agent.runAgent({ runId }, {
        onTextMessageContentEvent: () => {
          if (++contents === 10) agent.abortRun();
        },
      }).catch(() => undefined);
      await dropped;
      expect(assistantText(agent.messages).split(" ").length).toBeLessThan(60);
      // A fresh client of the thread repeats the run: same thread, same run id, its prompt.
      const again = new HttpAgent({ url: `${slow.url}/ag-ui`, threadId: thread, initialMessages: agent.messages.filter((m) => m.role === "user") });
      const events: BaseEvent[] = [];
      await again.runAgent({ runId }, { onEvent: ({ event }) => void events.push(event) });
      const types = events.map((e) => e.type);
      expect(types.slice(0, 2)).toEqual([EventType.RUN_STARTED, EventType.MESSAGES_SNAPSHOT]);
      expect(types.at(-1)).toBe(EventType.RUN_FINISHED);
      const full = Array.from({ length: 60 }, (_, i) => i + 1).join(" ");
      expect(assistantText(again.messages)).toBe(full);
      expect(again.messages.filter((m) => m.role === "assistant")).toHaveLength(1);
      // The turn ran once: one prompt, one reply in the store.
      const page = (await (await fetch(`${slow.url}/api/sessions/${await sessionOf(slow.url)}/messages`)).json()) as { messages: Array<{ role: string; content: string }> };
      expect(page.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
      expect(page.messages[1]!.content).toBe(full);
    } finally {
      await slow.close();
    }
  });
});

async function sessionOf(url: string): Promise<string> {
  const list = (await (await fetch(`${url}/api/sessions`)).json()) as { sessions: Array<{ session_id: string }> };
  expect(list.sessions).toHaveLength(1);
  return list.sessions[0]!.session_id;
}

describe("the attackers", () => {
  it("another principal's thread: its session id names a new thread of the caller's own", async () => {
    const thread = threadId();
    const agent = agentOf(thread);
    say(agent, "count to 3");
    await run(agent);
    const list = (await (await fetch(`${srv.url}/api/sessions`, { headers: auth(KEY_A) })).json()) as { sessions: Array<{ session_id: string }> };
    const theirs = list.sessions[0]!.session_id;
    const intruder = agentOf(theirs, { key: KEY_B });
    say(intruder, "recall");
    await run(intruder);
    expect(assistantText(intruder.messages)).not.toContain("count to 3");
    expect(await storedAssistant(theirs)).toHaveLength(1);
    // Reconnecting to it (no new message) is the same answer as for a thread nobody has.
    const peek = await fetch(`${srv.url}/ag-ui`, { method: "POST", headers: { ...auth(KEY_B), "content-type": "application/json" }, body: JSON.stringify({ threadId: `${theirs}-x`, runId: "r", messages: [] }) });
    expect(peek.status).toBe(404);
  });

  it("a foreign Origin is 403 and no key is 401, before anything runs", async () => {
    const body = JSON.stringify({ threadId: threadId(), runId: "r1", messages: [{ id: "m", role: "user", content: "hi" }] });
    expect((await fetch(`${srv.url}/ag-ui`, { method: "POST", headers: { ...auth(KEY_A), "content-type": "application/json", Origin: "https://evil.example" }, body })).status).toBe(403);
    expect((await fetch(`${srv.url}/ag-ui`, { method: "POST", headers: { "content-type": "application/json" }, body })).status).toBe(401);
  });

  it("fields it does not take are 400 naming them: unknown keys, forwardedProps, state keys that are not Tether's, a video", async () => {
    const post = (body: Record<string, unknown>) =>
      fetch(`${srv.url}/ag-ui`, {
        method: "POST",
        headers: { ...auth(KEY_A), "content-type": "application/json" },
        body: JSON.stringify({ threadId: threadId(), runId: "r", messages: [{ id: "m", role: "user", content: "hi" }], ...body }),
      });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ model: "x" }, "model"],
      [{ forwardedProps: { temperature: 2 } }, "forwardedProps.temperature"],
      [{ state: { cart: [] } }, "state.cart"],
      [{ messages: [{ id: "m", role: "user", content: [{ type: "video", source: { type: "url", value: "https://x/y.mp4" } }] }] }, "messages.0.content.0.type"],
      [{ threadId: "" }, "threadId"],
      [{ parentRunId: "run-0" }, "parentRunId"],
      [{ protocolVersion: "2.0" }, "protocolVersion"],
    ];
    for (const [body, param] of cases) {
      const res = await post(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe(param);
    }
  });
});
