/**
 * Opening a session by its URL waits on nothing it does not need (#33), in Debian's Chromium
 * against a real gateway: the WebSocket opens while `/v1/models` checks the key, and
 * `session.resume` goes out before `session.list` has answered (the list fills the sidebar when
 * it comes). Asserted by order, not time: `/v1/models` and the list's answer are held until the
 * resume is seen (each with a bound, so the old order fails with what it did rather than hangs).
 */
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { Method, TetherClient } from "../../src/client/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { chromiumAvailable, ensureWebBuilt, launchBrowser, type Browser } from "./browser.js";

/** How long a held answer waits for the resume before it goes anyway (the old order then fails the assertions). */
const HOLD_BOUND_MS = 5000;

interface Held {
  /** What happened, in order: "models answered", "resume sent", "list answered". */
  order: string[];
}

/** Holds `/v1/models` and the first `session.list` answer until the page sends `session.resume`. */
async function holdUntilResume(page: Page): Promise<Held> {
  const held: Held = { order: [] };
  let resumed!: () => void;
  const resumeSeen = new Promise<void>((r) => (resumed = r));
  const bounded = () => Promise.race([resumeSeen, new Promise<void>((r) => setTimeout(r, HOLD_BOUND_MS))]);
  await page.route("**/v1/models", async (route) => {
    await bounded();
    held.order.push("models answered");
    await route.continue();
  });
  await page.routeWebSocket(/\/ws$/, (ws) => {
    const server = ws.connectToServer();
    let listId: unknown;
    ws.onMessage((m) => {
      const msg = JSON.parse(String(m)) as { id?: unknown; method?: string };
      if (msg.method === Method.SessionList && listId === undefined) listId = msg.id;
      if (msg.method === Method.SessionResume) {
        held.order.push("resume sent");
        resumed();
      }
      server.send(m);
    });
    server.onMessage((m) => {
      const msg = JSON.parse(String(m)) as { id?: unknown };
      if (listId === undefined || msg.id !== listId) return ws.send(m);
      listId = null; // only the first list's answer is held
      void bounded().then(() => {
        held.order.push("list answered");
        ws.send(m);
      });
    });
  });
  return held;
}

describe.skipIf(!chromiumAvailable)("web client: opening a session by URL runs its waits side by side (#33)", () => {
  let srv: TestServer;
  let browser: Browser;
  let id = "";

  beforeAll(async () => {
    await ensureWebBuilt();
    srv = await startTestServer({ demoDelayMs: 2 });
    browser = await launchBrowser();
    const client = new TetherClient({ url: `${srv.url.replace(/^http/, "ws")}/ws`, WebSocket: WebSocket as never });
    await client.connect();
    id = (await client.createSession({ title: "opened by URL" })).session_id;
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    const off = client.subscribe(id, (f) => {
      if (f.type === "turn.complete") done();
    });
    await client.resumeSession(id);
    await client.call(Method.PromptSubmit, { session_id: id, text: "count to 3" });
    await finished;
    off();
    await client.close();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  it("sends session.resume while /v1/models and session.list are still unanswered, then fills the sidebar", async () => {
    const page = await browser.page();
    const held = await holdUntilResume(page);
    await page.goto(`${srv.url}/#/s/${encodeURIComponent(id)}`);
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    expect(await page.locator('[data-kind="assistant"] .md').innerText()).toBe("1 2 3");
    // The list's answer came after the resume; the sidebar shows the session once it did.
    await page.locator(".session-list").getByText("opened by URL").waitFor();
    await expect.poll(() => held.order.length).toBe(3);
    expect(held.order[0]).toBe("resume sent");
    expect(held.order.slice(1).sort()).toEqual(["list answered", "models answered"]);
    await page.close();
  });

  it("an unknown session id in the URL still shows its not-found state", async () => {
    const page = await browser.page();
    await page.goto(`${srv.url}/#/s/sess_no_such_session`);
    await page.getByText("This session does not exist (or belongs to someone else).").waitFor();
    await page.close();
  });
});
