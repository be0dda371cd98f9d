/**
 * `tether acp`: an ACP agent on stdio, for editors (Zed, JetBrains, Neovim plugins) that start it
 * as their agent. stdout carries ACP only (newline-delimited JSON-RPC); logs go to stderr.
 *
 *   tether acp                         an embedded gateway on 127.0.0.1 (the usual store and config)
 *   tether acp --url http://HOST:PORT  a running gateway, through the SDK (WebSocket)
 *
 * Either way the agent talks to the gateway with the project's SDK (TetherClient), so its sessions
 * are the gateway's: they survive the editor, and `tether sessions` and the web page show them.
 */
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { loadConfig } from "../../config/index.js";
import { createLogger, exitAfterLogs } from "../../lib/logger.js";
import { normalizeGatewayUrl } from "../gateway-url.js";
import { createNodeClient } from "../node-client.js";
import { VERSION } from "../version.js";
import { createAcpAgent, type AcpModel } from "./acp-agent.js";

export interface AcpFlags {
  url?: string;
  token?: string;
  profile?: string;
  db?: string;
  config?: string;
}

export async function runAcp(flags: AcpFlags): Promise<void> {
  const logger = createLogger();
  let stopEmbedded: (() => Promise<void>) | null = null;
  let wsUrl: string;
  if (flags.url) {
    wsUrl = normalizeGatewayUrl(flags.url);
  } else {
    const { startServer } = await import("../server.js");
    const loaded = loadConfig({ env: process.env, flags: { host: "127.0.0.1", port: 0, dbPath: flags.db }, configPath: flags.config, createIfMissing: true });
    const server = await startServer(loaded.config, { logger, configPath: loaded.path });
    stopEmbedded = () => server.close();
    wsUrl = normalizeGatewayUrl(server.url);
    logger.info({ url: server.url }, "tether acp: embedded gateway started");
  }
  const tether = createNodeClient({ url: wsUrl, token: flags.token });
  try {
    await tether.connect();
  } catch (err) {
    process.stderr.write(`tether acp: ${(err as Error).message}\n`);
    await stopEmbedded?.().catch(() => undefined);
    await exitAfterLogs(1);
  }
  const httpBase = wsUrl.replace(/^ws/, "http").replace(/\/ws$/, "");
  const agent = createAcpAgent({
    tether,
    ...(flags.profile ? { profile: flags.profile } : {}),
    version: VERSION,
    httpBase,
    models: () => listModels(httpBase, flags.token, flags.profile),
  });
  const stream = acp.ndJsonStream(Writable.toWeb(process.stdout) as WritableStream<Uint8Array>, Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>);
  const conn = agent.connect(stream);
  // The editor closed the pipe: the sessions stay (they are the gateway's), this process ends.
  await conn.closed.catch(() => undefined);
  await tether.close().catch(() => undefined);
  if (stopEmbedded) await stopEmbedded().catch((err: unknown) => logger.error({ err }, "tether acp: embedded gateway stop failed"));
  await exitAfterLogs(0);
}

async function listModels(base: string, token: string | undefined, profile: string | undefined): Promise<AcpModel[]> {
  const res = await fetch(`${base}/v1/models`, {
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(profile ? { "x-tether-profile": profile } : {}) },
  });
  if (!res.ok) return [];
  const body = (await res.json()) as { data: Array<{ id: string; owned_by: string; requires_confirmation?: boolean }> };
  return body.data.map((m) => ({ id: m.id, provider: m.owned_by, ...(m.requires_confirmation ? { requires_confirmation: true } : {}) }));
}
