/**
 * The web page as an attacker, over raw sockets: a page on another origin, or a DNS-rebound name
 * (`rebind.evil.example` resolving to 127.0.0.1, whose Origin matches its own Host), sends what
 * a browser sends. Every HTTP route and the WebSocket upgrade refuse it — keyed or not, before auth
 * and before a body is read — while the gateway's own page, listed origins, configured names (a
 * reverse proxy's) and clients without Origin keep working. The same attacks in real Chromium are
 * in test/web/origin-host.test.ts.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config/index.js";
import { createTether } from "../../src/embed/index.js";
import { silentLogger } from "../../src/lib/logger.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { rawRequest, rawUpgrade } from "../support/raw-http.js";

let server: TestServer | undefined;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const c of cleanups.splice(0).reverse()) await c();
});

const portOf = (s: TestServer) => Number(new URL(s.url).port);

/** Every kind of route the gateway serves, with a body where the route takes one. */
const ROUTES: Array<{ method: string; path: string; body?: string }> = [
  { method: "GET", path: "/healthz" },
  { method: "GET", path: "/readyz" },
  { method: "GET", path: "/metrics" },
  { method: "GET", path: "/" },
  { method: "GET", path: "/assets/app.js" },
  { method: "GET", path: "/v1/models" },
  { method: "POST", path: "/v1/chat/completions", body: JSON.stringify({ model: "demo", messages: [{ role: "user", content: "count to 2" }] }) },
  { method: "POST", path: "/v1/responses", body: JSON.stringify({ model: "demo", input: "count to 2" }) },
  { method: "POST", path: "/v1/runs", body: JSON.stringify({ input: "count to 2" }) },
  { method: "GET", path: "/api/sessions" },
  { method: "POST", path: "/api/sessions", body: JSON.stringify({ cwd: "/" }) },
  { method: "GET", path: "/api/sessions/ses_x/events" },
  { method: "PATCH", path: "/api/sessions/ses_x/turns/turn_x", body: JSON.stringify({ text: "edited" }) },
  { method: "GET", path: "/api/workspace/folders" },
  { method: "GET", path: `/api/blobs/${"0".repeat(64)}` },
  { method: "GET", path: "/a2a/bots/helper/.well-known/agent-card.json" },
  { method: "POST", path: "/a2a/bots/helper", body: "{}" },
  { method: "OPTIONS", path: "/v1/chat/completions" },
];

async function sessionCount(s: TestServer, key?: string): Promise<number> {
  const res = await fetch(`${s.url}/api/sessions?include_hidden=true`, key ? { headers: { authorization: `Bearer ${key}` } } : {});
  return ((await res.json()) as { sessions: unknown[] }).sessions.length;
}

describe("Host: DNS rebinding", () => {
  it("a rebound name with its own matching Origin is refused 421 on every route and the upgrade, keyed or not", async () => {
    for (const apiKey of [undefined, "k-1"]) {
      server = await startTestServer({ ...(apiKey ? { apiKey } : {}) });
      const port = portOf(server);
      const attacker = { host: `rebind.evil.example:${port}`, origin: `http://rebind.evil.example:${port}`, ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) };
      for (const r of ROUTES) {
        const answer = await rawRequest(port, { method: r.method, path: r.path, headers: { ...attacker, "content-type": "application/json" }, ...(r.body ? { body: r.body } : {}) });
        expect(answer.status, `${r.method} ${r.path}`).toBe(421);
        expect(answer.json?.error, `${r.method} ${r.path}`).toMatchObject({ code: "host_not_allowed", type: "permission_error" });
        expect(answer.json.error.message).toContain("server.hosts");
      }
      // Without an Origin too (a same-origin GET carries none): the Host alone decides.
      expect((await rawRequest(port, { path: "/api/sessions", headers: { host: `rebind.evil.example:${port}` } })).status).toBe(421);
      const ws = await rawUpgrade(port, attacker);
      expect(ws.status).toBe(421);
      expect(ws.json.error.code).toBe("host_not_allowed");
      expect(await sessionCount(server, apiKey)).toBe(0);
      await server.close();
      server = undefined;
    }
  });

  it("serves localhost, IP literals, the bound host and server.hosts (exact and .domain), and a reload's new names", async () => {
    server = await startTestServer({ config: { server: { hosts: ["gw.example.com", ".corp.example"] } } });
    const port = portOf(server);
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `10.1.2.3:${port}`, "gw.example.com", `GW.Example.com:${port}`, "a.b.corp.example", "corp.example"]) {
      const r = await rawRequest(port, { path: "/api/sessions", headers: { host } });
      expect(r.status, host).toBe(200);
    }
    for (const host of ["evil.example", "gw.example.com.evil.example", "xcorp.example", "localhost.evil.example"]) {
      expect((await rawRequest(port, { path: "/api/sessions", headers: { host } })).status, host).toBe(421);
    }
    // Not a host name at all: refused (Node's parser may answer 400 before the gateway sees it).
    for (const host of ["user@127.0.0.1", "127.0.0.1/x"]) {
      expect([400, 421], host).toContain((await rawRequest(port, { path: "/api/sessions", headers: { host } })).status);
    }
    // A reload (SIGHUP, a file change) applies new names at once.
    expect((await rawRequest(port, { path: "/healthz", headers: { host: "new.example" } })).status).toBe(421);
    server.server.applyConfig(resolveConfig({ TETHER_HOSTS: "new.example" }, { host: "127.0.0.1", port: 0, dbPath: server.dbPath }));
    expect((await rawRequest(port, { path: "/healthz", headers: { host: "new.example" } })).status).toBe(200);
  });

  it("behind a reverse proxy: X-Forwarded-Host must be a listed name, and the page's Origin is its public name", async () => {
    server = await startTestServer({ config: { server: { hosts: ["gw.example.com"] } } });
    const port = portOf(server);
    const proxied = { host: `127.0.0.1:${port}`, "x-forwarded-host": "gw.example.com", origin: "https://gw.example.com" };
    expect((await rawRequest(port, { path: "/api/sessions", headers: proxied })).status).toBe(200);
    expect((await rawUpgrade(port, proxied)).status).toBe(101);
    // A forwarded name nobody listed is refused, whatever the Host; so is a page on another name.
    const unlisted = await rawRequest(port, { path: "/api/sessions", headers: { ...proxied, "x-forwarded-host": "rebind.evil.example" } });
    expect(unlisted.status).toBe(421);
    expect(unlisted.json.error.message).toContain("X-Forwarded-Host");
    expect((await rawRequest(port, { path: "/api/sessions", headers: { ...proxied, origin: "https://evil.example" } })).status).toBe(403);
  });
});

describe("Origin", () => {
  it("a foreign Origin is refused 403 on every route and at the upgrade, keyed or not, and nothing is created", async () => {
    for (const apiKey of [undefined, "k-2"]) {
      server = await startTestServer({ ...(apiKey ? { apiKey } : {}) });
      const port = portOf(server);
      for (const origin of ["https://evil.example", `http://127.0.0.1:${port + 1}`, `http://localhost:${port}`, "null"]) {
        const headers = { host: `127.0.0.1:${port}`, origin, "content-type": "text/plain", ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) };
        for (const r of ROUTES) {
          const answer = await rawRequest(port, { method: r.method, path: r.path, headers, ...(r.body ? { body: r.body } : {}) });
          expect(answer.status, `${origin} ${r.method} ${r.path}`).toBe(403);
          expect(answer.json?.error?.code, `${origin} ${r.method} ${r.path}`).toBe("origin_not_allowed");
        }
        const ws = await rawUpgrade(port, headers);
        expect(ws.status, origin).toBe(403);
        expect(ws.json.error.code).toBe("origin_not_allowed");
      }
      expect(await sessionCount(server, apiKey)).toBe(0);
      await server.close();
      server = undefined;
    }
  });

  it("the gateway's own page, clients without Origin and listed origins (cors.origins, http.cors_origins, TETHER_CORS_ORIGINS) pass", async () => {
    server = await startTestServer({ config: { cors: { origins: ["https://app.example"] }, http: { cors_origins: ["https://old.example"] } } });
    const port = portOf(server);
    for (const [host, origin] of [
      [`127.0.0.1:${port}`, `http://127.0.0.1:${port}`],
      [`localhost:${port}`, `http://localhost:${port}`],
      [`[::1]:${port}`, `http://[::1]:${port}`],
    ] as const) {
      expect((await rawRequest(port, { path: "/api/sessions", headers: { host, origin } })).status, origin).toBe(200);
      expect((await rawUpgrade(port, { host, origin })).status, origin).toBe(101);
    }
    expect((await rawUpgrade(port, { host: `127.0.0.1:${port}` })).status).toBe(101);
    expect((await rawRequest(port, { path: "/api/sessions", headers: { host: `127.0.0.1:${port}` } })).status).toBe(200);
    for (const origin of ["https://app.example", "https://APP.example:443", "https://old.example"]) {
      const r = await rawRequest(port, { path: "/v1/models", headers: { host: `127.0.0.1:${port}`, origin } });
      expect(r.status, origin).toBe(200);
      expect(r.headers["access-control-allow-origin"]).toBe(origin);
      expect((await rawUpgrade(port, { host: `127.0.0.1:${port}`, origin })).status, origin).toBe(101);
    }
    const preflight = await rawRequest(port, {
      method: "OPTIONS",
      path: "/v1/chat/completions",
      headers: { host: `127.0.0.1:${port}`, origin: "https://app.example", "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(204);
    expect(resolveConfig({ TETHER_CORS_ORIGINS: "https://a.example" }).http.cors_origins).toEqual(["https://a.example"]);
  });

  it("a browser's no-cors request from another site (no Origin, Sec-Fetch-Site cross-site) is refused; a navigation is not", async () => {
    server = await startTestServer();
    const port = portOf(server);
    const host = `127.0.0.1:${port}`;
    const img = await rawRequest(port, { path: "/api/sessions", headers: { host, "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "image" } });
    expect(img.status).toBe(403);
    expect(img.json.error.code).toBe("origin_not_allowed");
    expect((await rawRequest(port, { path: "/", headers: { host, "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate" } })).status).toBe(200);
    expect((await rawRequest(port, { path: "/api/sessions", headers: { host, "sec-fetch-site": "same-origin", "sec-fetch-mode": "cors" } })).status).toBe(200);
  });

  it("the check comes before a body is read: a refused POST answers at once and closes", async () => {
    server = await startTestServer();
    const port = portOf(server);
    // Headers announcing 5 MB that never come: the answer cannot have waited for them.
    const r = await rawRequest(port, { method: "POST", path: "/v1/chat/completions", headers: { host: `127.0.0.1:${port}`, origin: "https://evil.example", "content-length": "5000000" } });
    expect(r.status).toBe(403);
    expect(r.headers.connection).toBe("close");
  });
});

describe("the other listeners", () => {
  it("--ws-only checks Host and Origin on /healthz and the upgrade", async () => {
    server = await startTestServer({ config: { wsOnly: true } });
    const port = portOf(server);
    expect((await rawRequest(port, { path: "/healthz", headers: { host: `rebind.evil.example:${port}` } })).status).toBe(421);
    expect((await rawRequest(port, { path: "/healthz", headers: { host: `127.0.0.1:${port}`, origin: "https://evil.example" } })).status).toBe(403);
    expect((await rawUpgrade(port, { host: `127.0.0.1:${port}`, origin: "https://evil.example" })).status).toBe(403);
    expect((await rawUpgrade(port, { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}` })).status).toBe(101);
  });

  it("embedded (createTether().attach): Tether's paths and /ws are checked, the application's own routes are its own", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tether-embed-guard-"));
    const tether = await createTether({ db: join(dir, "t.db"), config: join(dir, "none.yaml"), env: {}, logger: silentLogger() });
    cleanups.push(() => tether.close());
    const app = createServer((_req, res) => res.writeHead(200).end("mine"));
    tether.attach(app);
    await new Promise<void>((r) => app.listen(0, "127.0.0.1", r));
    cleanups.push(() => new Promise<void>((r) => app.close(() => r())));
    const port = (app.address() as AddressInfo).port;
    const attacker = { host: `127.0.0.1:${port}`, origin: "https://evil.example" };
    expect((await rawRequest(port, { path: "/api/sessions", headers: attacker })).status).toBe(403);
    expect((await rawRequest(port, { path: "/api/sessions", headers: { host: `rebind.evil.example:${port}` } })).status).toBe(421);
    expect((await rawUpgrade(port, attacker)).status).toBe(403);
    expect((await rawUpgrade(port, { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}` })).status).toBe(101);
    expect((await rawRequest(port, { path: "/mine", headers: attacker })).body).toBe("mine");
  });
});
