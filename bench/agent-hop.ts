/**
 * Agent hop latency: one `message_agent` from bot alpha to bot beta of the same gateway and beta's
 * reply back into alpha's live chat. Hop = the time from the sender's `tool.complete` (the
 * envelope is committed with it) to the `agent_reply` message in alpha's chat, at a WebSocket
 * client: the push wake, the outbox's claim and three forward steps (each a store write), beta's
 * inbox turn (the demo provider, unpaced) and the delivery into the tip. Baseline, measured in the
 * same run, alternating: the same work as one ordinary turn — a prompt of the same length on a
 * session, from submit to `turn.complete`. Goal: hop p50 < 50 ms. Third in each round: the same
 * hop to bot beta of a second gateway on loopback (`beta@west`: an A2A `message/send` through the
 * SDK, beta's turn there, the task's result back).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Frame } from "../src/protocol/index.js";
import { RpcClient } from "./rpc-client.js";
import { median, percentile, progress } from "./stats.js";
import { startTether } from "./tether-server.js";

export interface AgentHopResult {
  hops: number;
  /** The same hop to a bot of a second gateway on loopback (A2A `message/send` through the SDK). */
  a2aP50Ms: number;
  a2aP90Ms: number;
  a2aSamplesMs: number[];
  hopP50Ms: number;
  hopP90Ms: number;
  turnP50Ms: number;
  turnP90Ms: number;
  hopSamplesMs: number[];
  turnSamplesMs: number[];
}

export async function benchAgentHop(opts: { hops: number; warmup: number }): Promise<AgentHopResult> {
  // The peer gateway: its bot beta, behind its own key.
  const west = await startTether({ apiKey: "bench-key-west", home: mkdtempSync(join(tmpdir(), "tether-bench-west-")), profiles: { beta: { bot: { name: "beta" } } } });
  const tether = await startTether({
    home: mkdtempSync(join(tmpdir(), "tether-bench-agents-")),
    profiles: { alpha: { bot: { name: "alpha" } }, beta: { bot: { name: "beta" } } },
    peers: { west: { url: west.server.url, api_key: "bench-key-west" } },
  });
  const client = await RpcClient.open(tether.wsUrl);
  const waiters = new Set<(f: Frame<any>) => boolean>();
  client.onEvent = (frame) => {
    for (const w of [...waiters]) if (w(frame)) waiters.delete(w);
  };
  const until = (pred: (f: Frame<any>) => boolean) => new Promise<number>((resolve) => waiters.add((f) => (pred(f) ? (resolve(performance.now()), true) : false)));

  const chat = await client.call<{ session_id: string }>("bot.chat", { profile: "alpha" });
  const plain = await client.call<{ session_id: string }>("session.create", { profile: "beta" });
  const text = "ping";
  const promptTo = (to: string) => `call: message_agent ${JSON.stringify({ to, text })}`;

  const hop = async (to = "beta"): Promise<number> => {
    const prompt = promptTo(to);
    const sent = until((f) => f.session_id === chat.session_id && f.type === "tool.complete");
    const replied = until((f) => f.session_id === chat.session_id && f.type === "message.complete" && f.payload.display_kind === "agent_reply");
    const turnDone = until((f) => f.session_id === chat.session_id && f.type === "turn.complete");
    await client.call("prompt.submit", { profile: "alpha", session_id: chat.session_id, text: prompt });
    const t0 = await sent;
    const t1 = await replied;
    await turnDone;
    return t1 - t0;
  };
  // What beta's inbox does for one hop, as one ordinary turn: its prompt is the envelope's.
  const turn = async (): Promise<number> => {
    const done = until((f) => f.session_id === plain.session_id && f.type === "turn.complete");
    const t0 = performance.now();
    await client.call("prompt.submit", { profile: "beta", session_id: plain.session_id, text: `[Message from the agent alpha (envelope env_0123456789abcdef0123); your answer is sent back to it.]\n${text}` });
    return (await done) - t0;
  };

  for (let i = 0; i < opts.warmup; i++) {
    await hop();
    await turn();
    await hop("beta@west");
  }
  const hops: number[] = [];
  const turns: number[] = [];
  const a2a: number[] = [];
  for (let i = 0; i < opts.hops; i++) {
    hops.push(await hop());
    turns.push(await turn());
    a2a.push(await hop("beta@west"));
    if (i % 20 === 19) progress("agents", `${i + 1}/${opts.hops} hops`);
  }
  client.close();
  await tether.close();
  await west.close();
  const round = (xs: number[]) => xs.map((x) => Math.round(x * 100) / 100);
  return {
    hops: opts.hops,
    a2aP50Ms: median(a2a),
    a2aP90Ms: percentile(a2a, 90),
    a2aSamplesMs: round(a2a),
    hopP50Ms: median(hops),
    hopP90Ms: percentile(hops, 90),
    turnP50Ms: median(turns),
    turnP90Ms: percentile(turns, 90),
    hopSamplesMs: hops.map((x) => Math.round(x * 100) / 100),
    turnSamplesMs: turns.map((x) => Math.round(x * 100) / 100),
  };
}
