/**
 * The package's `tether` entry point: a gateway started in-process with the CLI's options, and a
 * gateway handed to an application's own node:http server or hono app, which keep their routes.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAdaptorServer } from "@hono/node-server";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { createTether, startTether, type EmbeddedTether, type RunningTether } from "../../src/embed/index.js";
import { silentLogger } from "../../src/lib/logger.js";
import { RpcSocket } from "../support/rpc-socket.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function options() {
  const dir = mkdtempSync(join(tmpdir(), "tether-embed-"));
  // A config file that does not exist and an empty environment: nothing of the developer's leaks in.
  return { db: join(dir, "tether.db"), config: join(dir, "none.yaml"), env: { TETHER_DEMO_DELAY_MS: "1" }, logger: silentLogger() };
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function pingOver(url: string): Promise<unknown> {
  const sock = await RpcSocket.open(`${url.replace(/^http/, "ws")}/ws`);
  try {
    return await sock.call("ping");
  } finally {
    sock.close();
  }
}

describe("startTether", () => {
  it("runs the gateway on its own port with the CLI's options, and stops it gracefully", async () => {
    const gw: RunningTether = await startTether({ ...options(), port: 0, host: "127.0.0.1" });
    cleanups.push(() => gw.close());
    expect(gw.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(gw.config.demo.delayMs).toBe(1); // the env given, not process.env
    expect(await (await fetch(`${gw.url}/healthz`)).json()).toEqual({ status: "ok" });
    expect(await pingOver(gw.url)).toMatchObject({ pong: true, epoch: gw.epoch });
  });

  it("refuses a non-loopback bind without a key, like tether serve", async () => {
    await expect(startTether({ ...options(), host: "0.0.0.0", port: 0 })).rejects.toThrow(/without an API key/);
  });
});

describe("createTether", () => {
  it("attach(server): the application keeps its own routes; /ws, /v1/*, /api/*, /healthz go to Tether", async () => {
    const tether: EmbeddedTether = await createTether(options());
    cleanups.push(() => tether.close());
    const server = createServer((req, res) => {
      res.writeHead(200, { "content-type": "text/plain" }).end(`mine: ${req.url}`);
    });
    tether.attach(server);
    const url = await listen(server);

    expect(await (await fetch(`${url}/hello`)).text()).toBe("mine: /hello");
    expect(await (await fetch(`${url}/`)).text()).toBe("mine: /"); // the web client only on request
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: "ok" });
    expect(await pingOver(url)).toMatchObject({ pong: true, epoch: tether.epoch });

    const res = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "demo", messages: [{ role: "user", content: "count to 3" }] }),
    });
    expect(res.status).toBe(200);
    expect((await res.json()).choices[0].message.content).toBe("1 2 3");
  });

  it("route(app) + attachWebSocket(server): a hono application gets the HTTP API and /ws", async () => {
    const tether = await createTether(options());
    cleanups.push(() => tether.close());
    const app = new Hono();
    app.get("/hello", (c) => c.text("hi from the app"));
    tether.route(app);
    const server = createAdaptorServer({ fetch: app.fetch }) as Server;
    tether.attachWebSocket(server);
    const url = await listen(server);

    expect(await (await fetch(`${url}/hello`)).text()).toBe("hi from the app");
    const created = await fetch(`${url}/api/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title: "embedded" }) });
    expect(created.status).toBe(201);
    const snap = await created.json();
    const list = await (await fetch(`${url}/api/sessions`)).json();
    expect(list.sessions.map((s: { session_id: string }) => s.session_id)).toContain(snap.session_id);
    expect(await pingOver(url)).toMatchObject({ pong: true });
    // The app's unmatched paths stay the app's (hono's own 404), not Tether's error envelope.
    const missing = await fetch(`${url}/nothing`);
    expect(missing.status).toBe(404);
    expect(await missing.text()).toBe("404 Not Found");
  });
});
