/**
 * Liveness against a peer that accepts the socket, says `gateway.ready`, then never answers: the
 * client must notice through its ping bound and reconnect. A plain `ws` server plays that peer.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { ErrorCode, EventType, type ClientStatus } from "../../src/client/index.js";
import { encodeEventNotification } from "../../src/protocol/index.js";
import { newClient, waitFor } from "./client-support.js";

interface Peer {
  url: string;
  connections: number;
  /** `ping` requests received, over all connections. */
  pings: number;
  close(): Promise<void>;
}

async function startPeer(mode: "silent" | "method-not-found" | "no-ready"): Promise<Peer> {
  const http: Server = createServer();
  const wss = new WebSocketServer({ server: http, path: "/ws" });
  const peer = { url: "", connections: 0, pings: 0, close: async () => undefined };
  wss.on("connection", (ws) => {
    peer.connections++;
    if (mode !== "no-ready") {
      const payload = { epoch: "e-peer", version: "0", protocol: 1, heartbeat_ms: 15000 };
      ws.send(encodeEventNotification({ type: EventType.GatewayReady, session_id: "", epoch: "e-peer", ts: Date.now(), payload }));
    }
    ws.on("message", (data) => {
      const { id, method } = JSON.parse(data.toString());
      if (method === "ping") peer.pings++;
      if (mode !== "method-not-found") return; // half-open: requests vanish
      ws.send(JSON.stringify({ jsonrpc: "2.0", id, error: { code: ErrorCode.MethodNotFound, message: "Method not found" } }));
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  peer.url = `ws://127.0.0.1:${(http.address() as AddressInfo).port}/ws`;
  peer.close = async () => {
    for (const ws of wss.clients) ws.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
    await new Promise<void>((resolve) => http.close(() => resolve()));
  };
  return peer;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

describe("liveness", () => {
  it("treats an unanswered ping as half-open: drops the socket and reconnects", async () => {
    const peer = await startPeer("silent");
    cleanups.push(peer.close);
    const client = newClient(peer.url, { pingIntervalMs: 50, pingTimeoutMs: 100, backoff: { initialMs: 10, jitter: 0 } });
    cleanups.push(() => client.close());
    const statuses: ClientStatus[] = [];
    client.onStatus((s) => statuses.push(s));
    await client.connect();
    await waitFor(() => peer.connections >= 2 && client.status.state === "connected", 3000, "reconnect after ping timeout");
    const reconnecting = statuses.find((s) => s.state === "reconnecting");
    expect(reconnecting).toMatchObject({ state: "reconnecting", attempt: 1, reason: expect.stringMatching(/ping/) });
  });

  it("counts -32601 on ping (an older server) as healthy", async () => {
    const peer = await startPeer("method-not-found");
    cleanups.push(peer.close);
    const client = newClient(peer.url, { pingIntervalMs: 20, pingTimeoutMs: 100 });
    cleanups.push(() => client.close());
    const statuses: ClientStatus[] = [];
    client.onStatus((s) => statuses.push(s));
    await client.connect();
    // Wait on the pings themselves (not a time): with none sent, nothing here would be tested.
    await waitFor(() => peer.pings >= 5, 5000, "five pings answered with -32601");
    expect(peer.connections).toBe(1);
    expect(statuses.map((s) => s.state)).toEqual(["connecting", "connected"]);
  });

  it("bounds a dial that never gets gateway.ready", async () => {
    const peer = await startPeer("no-ready");
    cleanups.push(peer.close);
    const client = newClient(peer.url, { connectTimeoutMs: 100 });
    cleanups.push(() => client.close());
    await expect(client.connect()).rejects.toThrow(/no gateway.ready within 100 ms/);
  });

  it("close() stops reconnecting", async () => {
    const peer = await startPeer("silent");
    cleanups.push(peer.close);
    const client = newClient(peer.url, { pingIntervalMs: 20, pingTimeoutMs: 30, backoff: { initialMs: 50, jitter: 0 } });
    await client.connect();
    await waitFor(() => client.status.state === "reconnecting", 2000, "reconnecting");
    await client.close();
    const seen = peer.connections;
    await new Promise((r) => setTimeout(r, 150));
    expect(peer.connections).toBe(seen);
    expect(client.status.state).toBe("closed");
  });
});
