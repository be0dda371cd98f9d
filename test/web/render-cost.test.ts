/**
 * What a streamed frame costs the page (#33), counted, not timed: a reply streaming into a session
 * renders that reply on every frame and leaves the finished messages above it alone (a finished
 * exchange renders again only when what it shows changes — e.g. its actions when a turn starts and
 * ends); the streaming reply's DOM is patched, not replaced, so a reader's selection in it stays. The page counts renders per block when `tether.test.renders` is in localStorage
 * (web/src/render-probe.ts). Debian's Chromium against a real gateway (demo provider).
 */
import { describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import type { TestServer } from "../support/start-server.js";
import { browserSuite, chromiumAvailable, openApp, send, startSession, type Browser } from "./browser.js";

const renders = (page: Page) => page.evaluate(() => ({ ...((window as unknown as { __tetherRenders?: Record<string, number> }).__tetherRenders ?? {}) }));

describe.skipIf(!chromiumAvailable)("web client: a streamed frame renders only the streaming reply (#33)", () => {
  let srv: TestServer;
  let browser: Browser;
  browserSuite({ demoDelayMs: 3 }, (s, b) => {
    srv = s;
    browser = b;
  });

  it("does not render finished messages again while a reply streams below them", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await page.evaluate(() => localStorage.setItem("tether.test.renders", "1"));
    await page.reload();
    await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
    await startSession(page, "count to 3");
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    await send(page, "count to 4");
    await page.locator('[data-kind="assistant"][data-status="complete"]').nth(1).waitFor();
    const finished = await page.locator('[data-kind="assistant"], [data-kind="user"]').evaluateAll((els) => els.map((e) => e.getAttribute("data-key")!));
    expect(finished).toHaveLength(4);
    const before = await renders(page);

    await send(page, "count to 1200");
    const streaming = page.locator('[data-kind="assistant"][data-status="streaming"]');
    await streaming.waitFor();
    const key = (await streaming.getAttribute("data-key"))!;
    await page.locator(`[data-kind="assistant"][data-key="${key}"][data-status="complete"]`).waitFor({ timeout: 60_000 });
    const after = await renders(page);

    // The streaming reply rendered on many frames (the probe counts)…
    expect(after[key]).toBeGreaterThanOrEqual(10);
    // …the finished ones only when their actions changed (the turn's start and end), not per frame.
    for (const k of finished) expect(after[k]! - before[k]!, k).toBeLessThanOrEqual(4);
    await page.close();
  });

  it("keeps a streaming reply's DOM as deltas arrive: a selection in it survives the next frames", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await startSession(page, "count to 3000");
    const body = page.locator('[data-kind="assistant"][data-status="streaming"] .md');
    await body.waitFor();
    await expect.poll(() => body.evaluate((el) => el.textContent!.length)).toBeGreaterThan(40);
    // "1 2 3" selected in the reply's first text node, as a reader's drag would.
    const picked = await body.evaluate((el) => {
      const text = el.querySelector("p")!.firstChild!;
      const range = document.createRange();
      range.setStart(text, 0);
      range.setEnd(text, 5);
      getSelection()!.removeAllRanges();
      getSelection()!.addRange(range);
      return { selected: getSelection()!.toString(), length: el.textContent!.length };
    });
    expect(picked.selected).toBe("1 2 3");
    // More frames arrive (the reply grows by many deltas, still streaming); the selection is still there.
    await expect.poll(() => body.evaluate((el) => el.textContent!.length)).toBeGreaterThan(picked.length + 300);
    expect(await page.locator('[data-kind="assistant"][data-status="streaming"]').count()).toBe(1);
    expect(await page.evaluate(() => getSelection()!.toString())).toBe("1 2 3");
    await page.close();
  });
});
