/**
 * A client tool call survives the gateway's death, with real `tether serve` processes: SIGKILL
 * while the call waits, restart on the same store, answer — by the SDK's `onToolCall` handler (the
 * resumed Snapshot still lists the call), or by a chat completion's tool message with
 * `X-Session-Id` — and the turn completes once.
 */
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { RpcSocket } from "../support/rpc-socket.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { tempDbPath } from "../support/temp-db.js";
import { newClient } from "../client/client-support.js";

const running: SpawnedGateway[] = [];
afterAll(async () => {
  for (const g of running) await g.kill("SIGKILL");
});

async function gateway(db: string): Promise<SpawnedGateway> {
  const g = await spawnGateway(["--port", "0", "--db", db], { TETHER_DEMO_DELAY_MS: "0" });
  running.push(g);
  return g;
}

const weather = { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } };

async function turnEnds(sock: RpcSocket, session_id: string): Promise<string[]> {
  const since = await sock.call("session.events.since", { session_id, after_seq: 0, include_transient: false });
  return since.events.filter((f: any) => f.type === "turn.complete").map((f: any) => f.payload.status);
}

describe("client tools across a SIGKILL", () => {
  it("the call still waits after the restart; the SDK handler answers it once and the turn completes once", async () => {
    const db = tempDbPath();
    const first = await gateway(db);
    const sock = await RpcSocket.open(first.wsUrl);
    const { session_id } = await sock.call("session.create", { client_tools: [weather] });
    const sub = await sock.call("prompt.submit", { session_id, text: 'call: get_weather {"city": "Oslo"}' });
    const opened = await sock.waitForEvent(session_id, (f) => f.type === "request.opened", 30_000);
    await first.kill("SIGKILL");
    sock.close();

    const second = await gateway(db);
    const client = newClient(second.wsUrl);
    await client.connect();
    const ran: string[] = [];
    client.onToolCall("get_weather", (args) => {
      ran.push((args as { city: string }).city);
      return "cold";
    });
    const snap = await client.resumeSession(session_id);
    expect(snap.open_requests.map((r) => [r.request_id, r.kind])).toEqual([[opened.payload.request_id, "client_tool"]]);
    const check = await RpcSocket.open(second.wsUrl);
    await check.call("session.resume", { session_id });
    // The handler may answer (and the turn end) before this socket resumes: read the log, not live frames.
    let ended = false;
    const deadline = Date.now() + 30_000;
    while (!ended) {
      const since = await check.call("session.events.since", { session_id, after_seq: 0, include_transient: false });
      ended = since.events.some((f: any) => f.type === "turn.complete" && f.payload.turn_id === sub.turn_id);
      if (!ended && Date.now() > deadline) throw new Error("timed out waiting for the turn to end");
      if (!ended) await new Promise((r) => setTimeout(r, 20));
    }
    expect(ran).toEqual(["Oslo"]);
    expect(await turnEnds(check, session_id)).toEqual(["complete"]);
    const messages = (await check.call("session.messages", { session_id })).messages;
    expect(messages.map((m: any) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(messages.at(-1).content).toBe("get_weather returned: cold");
    await client.close();
    check.close();
  });

  it("a chat completion's call: after SIGKILL and restart, the tool message with X-Session-Id resumes the parked turn", async () => {
    const db = tempDbPath();
    const first = await gateway(db);
    const ai1 = new OpenAI({ baseURL: `${first.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const tools: OpenAI.Chat.ChatCompletionTool[] = [{ type: "function", function: weather }];
    const made = await ai1.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "call: get_weather {}" }], tools }).withResponse();
    const sessionId = made.response.headers.get("x-session-id")!;
    const call = made.data.choices[0]!.message.tool_calls![0]!;
    await first.kill("SIGKILL");

    const second = await gateway(db);
    const ai2 = new OpenAI({ baseURL: `${second.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const next = await ai2.chat.completions.create(
      { model: "demo", messages: [{ role: "tool", tool_call_id: call.id, content: "warm" }], tools },
      { headers: { "X-Session-Id": sessionId } },
    );
    expect(next.choices[0]!.message.content).toBe("get_weather returned: warm");
    const sock = await RpcSocket.open(second.wsUrl);
    await sock.call("session.resume", { session_id: sessionId });
    expect(await turnEnds(sock, sessionId)).toEqual(["complete"]);
    sock.close();
  });
});
