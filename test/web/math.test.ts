/**
 * Math in replies (#33), in Debian's Chromium against a real gateway (the demo provider quotes the
 * prompt back): `$…$`, `$$…$$`, `\(…\)` are typeset by KaTeX, loaded only once a message holds a
 * formula (its script is not in the page's entry bundle); prices stay text; a formula from the
 * model cannot make a link (`\href`: KaTeX's trust is off).
 */
import { describe, expect, it } from "vitest";
import type { TestServer } from "../support/start-server.js";
import { browserSuite, chromiumAvailable, openApp, screenshot, startSession, type Browser } from "./browser.js";

describe.skipIf(!chromiumAvailable)("web client: math in replies", () => {
  let srv: TestServer;
  let browser: Browser;
  browserSuite({ demoDelayMs: 0 }, (s, b) => {
    srv = s;
    browser = b;
  });

  it("typesets formulas with KaTeX loaded on demand; prices stay text; no links from a formula", async () => {
    const page = await browser.page();
    const scripts: string[] = [];
    page.on("request", (r) => {
      if (r.resourceType() === "script") scripts.push(new URL(r.url()).pathname);
    });
    await openApp(page, srv.url);
    await startSession(page, "plain words, it costs $5 and $10");
    const reply = page.locator('[data-kind="assistant"][data-status="complete"]');
    await reply.first().waitFor();
    expect(await reply.first().locator(".math").count()).toBe(0);
    expect(await reply.first().innerText()).toContain("$5 and $10");
    // No formula yet: KaTeX was never fetched.
    expect(scripts.some((s) => /\/assets\/math-/.test(s))).toBe(false);

    const box = page.getByLabel("Message");
    await box.fill("Euler: $e^{i\\pi} + 1 = 0$, inline \\(a^2+b^2=c^2\\) and $$\\int_0^1 x\\,dx = \\frac{1}{2}$$ and $\\href{javascript:alert(1)}{click}$\n$$\\sum_{k=1}^n k$$\nthe end");
    await box.press("Enter");
    const second = reply.nth(1);
    await second.waitFor();
    await expect.poll(() => second.locator(".math .katex").count()).toBe(5);
    // A formula starting a line is a block of its own, typeset as display math.
    expect(await second.locator(".math-display .katex-display").count()).toBe(1);
    expect(scripts.some((s) => /\/assets\/math-/.test(s))).toBe(true);
    // MathML for screen readers beside the drawn formula.
    expect(await second.locator(".katex math").count()).toBe(5);
    expect(await second.locator(".math a, .math [href]").count()).toBe(0);
    await screenshot(page, "21-math-desktop");
    await page.close();
  }, 60_000);
});
