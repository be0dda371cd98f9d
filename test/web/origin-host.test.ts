/**
 * The web page as an attacker, in real Chromium, against a key-less gateway (what `npm start`
 * runs): a page served by another local server (another origin) and a DNS-rebound page
 * (`rebind.evil.example`, resolved to 127.0.0.1 by Chromium's host-resolver rules; the page itself
 * is the attacker's, served through Playwright's routing) try the WebSocket and the sessions API.
 * Both fail and create nothing; the gateway's own page, in the same browser, still works.
 *
 * Chromium's own Local Network Access checks are turned off here: they block a rebound page's
 * requests to loopback today, but Firefox and Safari have no such check, and the gateway must hold
 * without a browser's help.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { CHROMIUM_ARGS, CHROMIUM_PATH, chromiumAvailable, ensureWebBuilt, openApp, startSession } from "./browser.js";

/** What the attacker's page does: the WebSocket (creating a session once open), a read, a write. */
const ATTACK = (gateway: string) => `<!doctype html><meta charset="utf-8"><title>cute cats</title><script>
window.report = (async () => {
  const out = {};
  out.ws = await new Promise((resolve) => {
    const ws = new WebSocket(${JSON.stringify(gateway.replace(/^http/, "ws"))} + "/ws");
    ws.onopen = () => { ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "session.create", params: { cwd: "/" } })); };
    ws.onmessage = (e) => { if (JSON.parse(e.data).id === 1) resolve("created: " + e.data); };
    ws.onerror = () => resolve("error");
    ws.onclose = (e) => resolve("closed " + e.code);
  });
  try {
    const r = await fetch(${JSON.stringify(gateway)} + "/api/sessions?include_hidden=true");
    out.read = r.status + " " + (await r.text());
  } catch (err) { out.read = "threw " + err.name; }
  try {
    // A "simple" request: no preflight, so the browser sends it whatever the answer will be.
    const r = await fetch(${JSON.stringify(gateway)} + "/api/sessions", { method: "POST", mode: "no-cors", headers: { "content-type": "text/plain" }, body: "{}" });
    out.write = r.type + " " + r.status;
  } catch (err) { out.write = "threw " + err.name; }
  return out;
})();
</script>`;

describe.skipIf(!chromiumAvailable)("the web page as an attacker, in Chromium", () => {
  let srv: TestServer;
  let attacker: Server;
  let attackerUrl: string;
  let context: BrowserContext;
  let userDataDir: string;

  beforeAll(async () => {
    await ensureWebBuilt();
    srv = await startTestServer({ demoDelayMs: 5 });
    attacker = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end(ATTACK(srv.url)));
    await new Promise<void>((r) => attacker.listen(0, "127.0.0.1", r));
    attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
    userDataDir = mkdtempSync(join(tmpdir(), "tether-chromium-"));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: [
        ...CHROMIUM_ARGS,
        "--host-resolver-rules=MAP rebind.evil.example 127.0.0.1",
        "--disable-features=BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights,PrivateNetworkAccessRespectPreflightResults,LocalNetworkAccessChecks",
      ],
    });
  }, 60_000);

  afterAll(async () => {
    await context?.close().catch(() => undefined);
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
    await new Promise<void>((r) => (attacker ? attacker.close(() => r()) : r()));
    await srv?.close();
  });

  async function sessionIds(): Promise<string[]> {
    const res = await fetch(`${srv.url}/api/sessions?include_hidden=true`);
    return ((await res.json()) as { sessions: Array<{ session_id: string }> }).sessions.map((s) => s.session_id);
  }

  async function report(page: Page): Promise<{ ws: string; read: string; write: string }> {
    return page.evaluate(() => (window as unknown as { report: Promise<{ ws: string; read: string; write: string }> }).report);
  }

  it("a page on another origin can neither open the WebSocket nor read or write the sessions API", async () => {
    // A transcript worth stealing, made by the operator's own client.
    const own = await RpcSocket.open(srv.wsUrl);
    const secret = (await own.call("session.create", { title: "secret plans" })).session_id as string;
    own.close();
    const page = await context.newPage();
    await page.goto(`${attackerUrl}/attack.html`);
    const r = await report(page);
    expect(r.ws).not.toMatch(/^created/);
    expect(r.read).toBe("threw TypeError");
    expect(r.read).not.toContain(secret);
    // The write's answer is opaque to the page; what matters is that the gateway refused it.
    expect(await sessionIds()).toEqual([secret]);
    await page.close();
  });

  it("a DNS-rebound page (its Origin matching its own Host) gets 421 and no WebSocket", async () => {
    const before = await sessionIds();
    const port = new URL(srv.url).port;
    const rebound = `http://rebind.evil.example:${port}`;
    const page = await context.newPage();
    // The attacker's page is served under the rebound name; its later requests reach the gateway.
    await page.route(`${rebound}/attack.html`, (route) => route.fulfill({ status: 200, contentType: "text/html", body: ATTACK(rebound) }));
    await page.goto(`${rebound}/attack.html`);
    const r = await report(page);
    expect(r.ws).not.toMatch(/^created/);
    // Same-origin to itself, so the page reads the answer: the refusal, never a session list.
    expect(r.read).toMatch(/^421 /);
    expect(JSON.parse(r.read.slice(4)).error.code).toBe("host_not_allowed");
    for (const id of before) expect(r.read).not.toContain(id);
    expect(await sessionIds()).toEqual(before);
    await page.close();
  });

  it("the gateway's own page still connects and creates sessions", async () => {
    const page = await context.newPage();
    await openApp(page, srv.url);
    const id = await startSession(page, "count to 2");
    expect(await sessionIds()).toContain(id);
    await page.close();
  });
});
