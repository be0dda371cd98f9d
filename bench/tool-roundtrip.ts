/**
 * Tool round trip: what the gateway adds to an MCP tool call. The same published MCP server
 * (`@modelcontextprotocol/server-filesystem`, over stdio) is called two ways in one run:
 *
 * - through the gateway: a real turn whose model (the demo provider's `call:` cue) makes K calls of
 *   `files__read_text_file` in one step; each runs through the tool runtime (offer, policy,
 *   executor with its timeout, the MCP client, result conversion) and is recorded durably
 *   (`tool.start`, `tool.complete` with the tool message row). Per call = the time from the first
 *   `tool.start` to the last `tool.complete` at the WebSocket client, divided by K;
 * - directly: one SDK `Client` on its own stdio connection to another instance of the same server,
 *   making the same K calls in a row.
 *
 * Rounds alternate (gateway, direct) after a warm-up; the figures are medians over the rounds.
 * Goal: the gateway adds ≤ 1 ms per call.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Frame } from "../src/protocol/index.js";
import { RpcClient } from "./rpc-client.js";
import { median, progress } from "./stats.js";
import { startTether } from "./tether-server.js";

export interface ToolRoundTripResult {
  callsPerRound: number;
  rounds: number;
  /** Per call, µs: medians over the rounds. */
  gatewayUs: number;
  directUs: number;
  addedUs: number;
  ratio: number;
  gatewaySamplesUs: number[];
  directSamplesUs: number[];
}

function filesystemServerArgs(dir: string): { command: string; args: string[] } {
  const require = createRequire(import.meta.url);
  const pkg = require.resolve("@modelcontextprotocol/server-filesystem/package.json");
  return { command: process.execPath, args: [join(dirname(pkg), "dist", "index.js"), dir] };
}

export async function benchToolRoundTrip(opts: { calls: number; rounds: number }): Promise<ToolRoundTripResult> {
  const dir = mkdtempSync(join(tmpdir(), "tether-bench-tools-"));
  const file = join(dir, "note.txt");
  writeFileSync(file, "a short note for the tool round trip\n");
  const server = filesystemServerArgs(dir);
  const tether = await startTether({ mcp_servers: { files: server }, limits: { maxIterations: 4 } });
  const client = await RpcClient.open(tether.wsUrl);
  const direct = new Client({ name: "bench-direct", version: "1.0.0" });
  await direct.connect(new StdioClientTransport({ ...server, stderr: "ignore" }));
  const args = { path: file };
  const prompt = `call: ${Array.from({ length: opts.calls }, () => `files__read_text_file ${JSON.stringify(args)}`).join("; ")}`;

  const viaGateway = async (): Promise<number> => {
    const snap = await client.call<{ session_id: string }>("session.create", {});
    let first = 0;
    let last = 0;
    let completes = 0;
    const done = new Promise<void>((resolve, reject) => {
      client.onEvent = (frame: Frame<any>) => {
        if (frame.session_id !== snap.session_id) return;
        if (frame.type === "tool.start" && first === 0) first = performance.now();
        if (frame.type === "tool.complete") {
          if (frame.payload.error) reject(new Error(`tool call failed: ${frame.payload.error}`));
          completes++;
          last = performance.now();
        }
        if (frame.type === "turn.complete") resolve();
      };
    });
    await client.call("prompt.submit", { session_id: snap.session_id, text: prompt });
    await done;
    await client.call("session.close", { session_id: snap.session_id });
    if (completes !== opts.calls) throw new Error(`expected ${opts.calls} tool calls, saw ${completes}`);
    return ((last - first) * 1000) / opts.calls;
  };
  const viaSdk = async (): Promise<number> => {
    const t0 = performance.now();
    for (let i = 0; i < opts.calls; i++) await direct.callTool({ name: "read_text_file", arguments: args });
    return ((performance.now() - t0) * 1000) / opts.calls;
  };

  try {
    await viaGateway();
    await viaSdk();
    const g: number[] = [];
    const d: number[] = [];
    for (let r = 0; r < opts.rounds; r++) {
      g.push(await viaGateway());
      d.push(await viaSdk());
      progress("tools", `round ${r + 1}/${opts.rounds}: gateway ${g.at(-1)!.toFixed(0)} µs, direct ${d.at(-1)!.toFixed(0)} µs per call`);
    }
    const gatewayUs = median(g);
    const directUs = median(d);
    return {
      callsPerRound: opts.calls,
      rounds: opts.rounds,
      gatewayUs,
      directUs,
      addedUs: gatewayUs - directUs,
      ratio: gatewayUs / directUs,
      gatewaySamplesUs: g,
      directSamplesUs: d,
    };
  } finally {
    await direct.close().catch(() => undefined);
    await client.close();
    await tether.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
