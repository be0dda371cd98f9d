/**
 * Leaving a balancer (gateway/listener-drain.ts, docs/deploy.md *Rolling restart*): SIGTERM's
 * drain fails `/readyz` first while everything is still served, each answer closing its
 * connection; then the stop refuses new connections, answers the requests already in, and drops
 * unread (no answer, the app never sees it) a request that still comes on an open connection —
 * what a proxy retries on another node, where a 503 "shutting down" would reach the client.
 */
import { request as httpRequest, createServer, Agent, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ListenerDrain } from "../../src/gateway/listener-drain.js";
import { startTestServer, type TestServer } from "../support/start-server.js";

let gateway: TestServer | undefined;
let plain: Server | undefined;
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
  plain?.closeAllConnections();
  await new Promise((r) => (plain ? plain.close(r) : r(undefined)));
  plain = undefined;
});

/** One GET on a keep-alive agent: status, Connection header, body. */
function get(url: string, agent: Agent): Promise<{ status: number; connection: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent }, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** Whether a new TCP connection to the port is accepted. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });
}

describe("draining the gateway (RunningServer.drain, then close)", () => {
  it("fails /readyz with `draining` first, still serves everything, and each answer closes its connection", async () => {
    gateway = await startTestServer();
    const agent = new Agent({ keepAlive: true });
    const before = await get(`${gateway.url}/readyz`, agent);
    expect(before.status).toBe(200);
    expect(before.connection).toBe("keep-alive");

    gateway.server.drain();
    const ready = await get(`${gateway.url}/readyz`, agent);
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.body)).toEqual({ status: "draining" });
    expect(ready.connection).toBe("close");
    const list = await get(`${gateway.url}/api/sessions`, agent);
    expect(list.status).toBe(200);
    expect(list.connection).toBe("close");
    agent.destroy();
  });

  it("the stop refuses new connections at once and still answers a request already in", async () => {
    gateway = await startTestServer({ demoDelayMs: 5 });
    const port = Number(new URL(gateway.url).port);
    const manager = gateway.server.manager;
    // A whole chat completion is answered only when its turn ends (~40 chunks × 5 ms).
    const inFlight = fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "demo", messages: [{ role: "user", content: "count to 40" }] }),
    });
    await expect.poll(() => manager.operatorStats().active_turns.length, { timeout: 10_000 }).toBe(1);
    const closing = gateway.server.close();
    expect(await accepts(port)).toBe(false);
    const res = await inFlight;
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: Array<{ message: { content: string }; finish_reason: string }> };
    expect(body.choices[0]!.finish_reason).toBe("stop");
    await closing;
    gateway = undefined;
  });
});

describe("ListenerDrain on a node:http server", () => {
  it("drops unread a request that comes on a connection still open after the stop began", async () => {
    let seen = 0;
    let release: (() => void) | undefined;
    plain = createServer((req: IncomingMessage, res: ServerResponse) => {
      seen++;
      // A stream that began before the stop (its headers said keep-alive) and ends after it.
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("streaming…");
      release = () => res.end("done");
    });
    await new Promise<void>((r) => plain!.listen(0, "127.0.0.1", r));
    const drain = new ListenerDrain(plain);
    const port = (plain.address() as AddressInfo).port;

    // One keep-alive connection with a stream on it when the stop begins: not idle, so not closed.
    const socket: Socket = connect(port, "127.0.0.1");
    let received = "";
    socket.on("data", (d: Buffer) => (received += d.toString()));
    const ended = new Promise<void>((r) => socket.once("close", () => r()));
    await new Promise<void>((r) => socket.once("connect", () => r()));
    socket.write("GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await expect.poll(() => received.includes("streaming")).toBe(true);
    expect(received).toContain("Connection: keep-alive");

    await drain.stopAccepting(5_000); // nothing waits for headers: the stream has them
    expect(await accepts(port)).toBe(false);
    release!();
    await expect.poll(() => received.includes("done")).toBe(true);

    // The proxy's next request on that connection: no answer, the handler never runs.
    socket.write("GET /after-stop HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await ended;
    expect(received.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    expect(seen).toBe(1);
  });

  it("an answer still to come when the drain begins closes its connection, and the stop waits for its headers", async () => {
    let release: (() => void) | undefined;
    plain = createServer((_req: IncomingMessage, res: ServerResponse) => {
      release = () => res.end("late");
    });
    await new Promise<void>((r) => plain!.listen(0, "127.0.0.1", r));
    const drain = new ListenerDrain(plain);
    const agent = new Agent({ keepAlive: true });
    const answer = get(`http://127.0.0.1:${(plain.address() as AddressInfo).port}/`, agent);
    await expect.poll(() => release !== undefined).toBe(true);
    drain.start();
    let stopped = false;
    const stopping = drain.stopAccepting(5_000).then(() => (stopped = true));
    await new Promise((r) => setImmediate(r));
    expect(stopped).toBe(false);
    release!();
    await stopping;
    expect(await answer).toEqual({ status: 200, connection: "close", body: "late" });
    agent.destroy();
  });
});
