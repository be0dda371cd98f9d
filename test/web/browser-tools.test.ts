/**
 * A browser-side tool in the web client, with Debian's Chromium against a real gateway: a session
 * made in the page declares `browser_time`, the model calls it (the demo provider's `call:` cue),
 * and the page answers it through the SDK's `onToolCall` — the reply quotes the browser's clock.
 */
import { describe, expect, it } from "vitest";
import type { TestServer } from "../support/start-server.js";
import { browserSuite, chromiumAvailable, newSession, openApp, send, type Browser } from "./browser.js";

describe.skipIf(!chromiumAvailable)("web client: a browser-side tool", () => {
  let srv: TestServer;
  let browser: Browser;
  browserSuite({ demoDelayMs: 0 }, (s, b) => {
    srv = s;
    browser = b;
  });

  it("the page runs browser_time when the model calls it, and the turn completes with its answer", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await newSession(page);
    await send(page, "call: browser_time {}");
    const reply = page.getByText(/browser_time returned: \{"now":"\d{4}-/);
    await reply.waitFor({ timeout: 30_000 });
    expect(await reply.innerText()).toContain('"time_zone":');
    expect(await page.locator(".request-card").count()).toBe(0);
  }, 60_000);
});
