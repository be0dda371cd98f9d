/**
 * A long session in the web client (#33), in Debian's Chromium against a real gateway: past
 * VIRTUAL_FROM exchanges the transcript is virtualised — the DOM holds only the exchanges near the
 * viewport whatever the length — it opens at the newest reply, scrolling up brings the oldest in,
 * and "Jump to latest" goes back while a reply streams. Figures for 2,000 messages: bench/web.ts.
 */
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Method, TetherClient } from "../../src/client/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { chromiumAvailable, ensureWebBuilt, launchBrowser, openApp, type Browser } from "./browser.js";

const TURNS = 120;

describe.skipIf(!chromiumAvailable)("web client: a long session is virtualised (#33)", () => {
  let srv: TestServer;
  let browser: Browser;
  let id = "";
  let oldestPrompt = "";

  beforeAll(async () => {
    await ensureWebBuilt();
    srv = await startTestServer({ demoDelayMs: 2 });
    browser = await launchBrowser();
    // TURNS finished turns, made over the SDK (each prompt waits for its turn.complete).
    const client = new TetherClient({ url: `${srv.url.replace(/^http/, "ws")}/ws`, WebSocket: WebSocket as never });
    await client.connect();
    id = (await client.createSession({ title: "long" })).session_id;
    let done: (() => void) | undefined;
    const off = client.subscribe(id, (f) => {
      if (f.type === "turn.complete") done?.();
      const p = f.payload as { role?: string; message_id?: string };
      if (f.type === "message.start" && p.role === "user" && !oldestPrompt) oldestPrompt = p.message_id!;
    });
    await client.resumeSession(id);
    for (let i = 1; i <= TURNS; i++) {
      const finished = new Promise<void>((r) => (done = r));
      await client.call(Method.PromptSubmit, { session_id: id, text: `count to ${(i % 5) + 2} (turn ${i})` });
      await finished;
    }
    off();
    await client.close();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  it("keeps the DOM bounded, opens at the newest reply, scrolls back to the first, jumps to the latest", async () => {
    const page = await browser.page();
    // The page counts renders per block (web/src/render-probe.ts).
    await openApp(page, srv.url);
    await page.evaluate(() => localStorage.setItem("tether.test.renders", "1"));
    await page.goto("about:blank");
    await openApp(page, `${srv.url}/#/s/${encodeURIComponent(id)}`);
    await page.getByTestId("virtual-transcript").waitFor();
    const users = page.locator('[data-kind="user"]');
    // The newest exchange is on screen; only a window of them is in the DOM.
    await page.getByText(`count to ${(TURNS % 5) + 2} (turn ${TURNS})`, { exact: true }).waitFor();
    const inDom = await users.count();
    expect(inDom).toBeGreaterThan(0);
    expect(inDom).toBeLessThan(30);
    const log = page.getByRole("log", { name: "Transcript" });
    await expect.poll(() => log.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight)).toBeLessThan(80);
    // Opened at the end: the oldest exchanges were never drawn (not first drawn, then replaced).
    expect(oldestPrompt).not.toBe("");
    expect(await page.evaluate((k) => (window as unknown as { __tetherRenders: Record<string, number> }).__tetherRenders[k], oldestPrompt)).toBeUndefined();

    // Scrolled to the top: the first exchange comes in, the newest goes out; still a window.
    for (let i = 0; i < 20; i++) {
      await log.evaluate((el) => el.scrollTo({ top: 0 }));
      if (await page.getByText("count to 3 (turn 1)", { exact: true }).count()) break;
      await page.waitForTimeout(100); // measuring settles the list's height
    }
    await page.getByText("count to 3 (turn 1)", { exact: true }).waitFor();
    expect(await page.getByText(`(turn ${TURNS})`).count()).toBe(0);
    expect(await users.count()).toBeLessThan(30);

    // A reply streaming below the fold: Jump to latest brings it in.
    await page.getByLabel("Message").fill("count to 800");
    await page.getByLabel("Message").press("Enter");
    await log.evaluate((el) => el.scrollTo({ top: 0 }));
    const jump = page.getByRole("button", { name: /Jump to latest/ });
    await jump.waitFor();
    await jump.click();
    await page.locator('[data-kind="assistant"][data-status="streaming"], [data-kind="assistant"][data-status="complete"]').last().waitFor();
    await page.getByText("count to 800", { exact: true }).waitFor();
    await expect.poll(() => log.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight)).toBeLessThan(80);
    expect(await users.count()).toBeLessThan(30);
    await page.close();
  });
});
