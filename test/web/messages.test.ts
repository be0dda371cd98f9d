/**
 * Per-message actions in Debian's Chromium against a real gateway (demo provider): Copy on prompts,
 * replies and code blocks, Edit and resend of any prompt (a new version, the old branch kept, the
 * model seeing the new one only), Regenerate of a finished reply, versions switched and shown the
 * same after a reload that forgot everything, and Continue on a reply the user stopped (its label
 * from the gateway). One gateway, one browser, one page.
 */
import { describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import type { TestServer } from "../support/start-server.js";
import { browserSuite, chromiumAvailable, newSession, openApp, screenshot, send, type Browser } from "./browser.js";

async function clipboardAfter(page: Page, click: () => Promise<void>): Promise<string> {
  await page.evaluate(() => navigator.clipboard.writeText("nothing yet"));
  await click();
  await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).not.toBe("nothing yet");
  return page.evaluate(() => navigator.clipboard.readText());
}

/** Reloads with this browser's storage emptied: what shows after it comes from the gateway. */
async function reloadForgetting(page: Page): Promise<void> {
  await page.evaluate(() => localStorage.clear());
  await page.reload();
  await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
}

const userTexts = (page: Page) => page.locator('[data-kind="user"]').allInnerTexts();
const replyTexts = (page: Page) => page.locator('[data-kind="assistant"] .md').allInnerTexts();

describe.skipIf(!chromiumAvailable)("web client per-message actions in Chromium", () => {
  let srv: TestServer;
  let browser: Browser;
  browserSuite({ demoDelayMs: 10 }, (s, b) => {
    srv = s;
    browser = b;
  });

  it("copies, edits and resends, regenerates, and continues a stopped reply; code blocks have a Copy button", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(srv.url).origin });
    await newSession(page);
    await send(page, "count to 3");
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    expect(await clipboardAfter(page, () => page.getByRole("button", { name: "Copy reply" }).click())).toBe("1 2 3");
    expect(await clipboardAfter(page, () => page.getByRole("button", { name: "Copy prompt" }).click())).toBe("count to 3");
    // Token usage of the turn, from message.complete.usage.
    expect(await page.getByTestId("usage").innerText()).toMatch(/^\d+ in · \d+ out$/);

    // Edit and resend: a new version of the exchange (the gateway's branch); the old one is kept.
    await page.getByRole("button", { name: "Edit" }).click();
    await page.getByLabel("Edit prompt").fill("count to 5");
    await page.getByRole("button", { name: "Send", exact: true }).first().click();
    const versions = page.getByTestId("versions");
    await expect.poll(() => versions.locator(".versions-count").innerText()).toBe("2 / 2");
    await expect.poll(() => replyTexts(page)).toEqual(["1 2 3 4 5"]);
    expect(await userTexts(page)).toEqual(["count to 5"]);
    // Switching versions is the gateway's (session.branch.select): a reload with nothing kept in
    // this browser shows the version chosen.
    await versions.getByRole("button", { name: "Previous version" }).click();
    await expect.poll(() => versions.locator(".versions-count").innerText()).toBe("1 / 2");
    expect(await userTexts(page)).toEqual(["count to 3"]);
    expect(await replyTexts(page)).toEqual(["1 2 3"]);
    await reloadForgetting(page);
    await expect.poll(() => versions.locator(".versions-count").innerText()).toBe("1 / 2");
    expect(await replyTexts(page)).toEqual(["1 2 3"]);
    // A used version's Regenerate is gone (Edit stays: it starts another version).
    expect(await page.getByRole("button", { name: "Regenerate" }).count()).toBe(0);
    expect(await page.getByRole("button", { name: "Edit" }).count()).toBe(1);
    await versions.getByRole("button", { name: "Next version" }).click();
    await expect.poll(() => versions.locator(".versions-count").innerText()).toBe("2 / 2");

    // Regenerate a finished reply: a third version.
    await page.getByRole("button", { name: "Regenerate" }).click();
    await expect.poll(() => versions.locator(".versions-count").innerText()).toBe("3 / 3");
    await expect.poll(() => page.locator('[data-kind="assistant"][data-status="complete"] .md').allInnerTexts()).toEqual(["1 2 3 4 5"]);
    expect(await userTexts(page)).toEqual(["count to 5"]);

    // Not only the newest exchange: edit the first of two, and the model sees the new branch only.
    await send(page, "recall");
    await expect.poll(() => replyTexts(page)).toEqual(["1 2 3 4 5", 'Earlier you said: "count to 5".']);
    await page.getByRole("button", { name: "Edit" }).first().click();
    await page.getByLabel("Edit prompt").fill("count to 2");
    await page.getByRole("button", { name: "Send", exact: true }).first().click();
    await expect.poll(() => versions.locator(".versions-count").innerText()).toBe("4 / 4");
    await expect.poll(() => replyTexts(page)).toEqual(["1 2"]);
    await send(page, "recall");
    await expect.poll(() => replyTexts(page)).toEqual(["1 2", 'Earlier you said: "count to 2".']);
    await screenshot(page, "18-versions-desktop");

    // Versions are the gateway's: a reload with nothing kept in this browser shows the same.
    await reloadForgetting(page);
    await expect.poll(() => versions.locator(".versions-count").innerText()).toBe("4 / 4");
    expect(await userTexts(page)).toEqual(["count to 2", "recall"]);

    // Continue on a reply the user stopped: no prompt of the user's, the rest joins the same reply.
    await send(page, "count to 500");
    await page.locator('[data-kind="assistant"][data-status="streaming"]').waitFor();
    await page.getByRole("button", { name: "Stop" }).click();
    const badge = page.getByTestId("interrupted-badge");
    await badge.waitFor();
    expect(await badge.innerText()).toBe("You stopped this");
    // The stop cause is the gateway's (stored with the reply), not this browser's memory.
    await reloadForgetting(page);
    await expect.poll(() => badge.innerText()).toBe("You stopped this");
    await page.getByRole("button", { name: "Continue" }).click();
    const rest = page.locator('[data-kind="assistant"][data-continues="true"]');
    await expect.poll(() => rest.getAttribute("data-status"), { timeout: 20_000 }).toBe("complete");
    expect(await userTexts(page)).toEqual(["count to 2", "recall", "count to 500"]);
    // One reply: the cut's badge is gone and the Copy copies both parts, 1 to 500 — after a reload too.
    await reloadForgetting(page);
    await rest.waitFor();
    expect(await badge.count()).toBe(0);
    const whole = await clipboardAfter(page, () => page.getByRole("button", { name: "Copy reply" }).last().click());
    expect(whole).toBe(Array.from({ length: 500 }, (_, i) => i + 1).join(" "));
    // One message on the page: the cut part shows inside the continuation, a single paragraph.
    expect(await page.locator('[data-kind="assistant"]').count()).toBe(3);
    expect((await rest.locator(".md").innerText()).trim()).toBe(whole);
    await screenshot(page, "19-continue-desktop");

    // A code block: its language in a head bar above the code (never over it), and a Copy button.
    await send(page, "show code:\n```js\nconst a = 1;\n```");
    const block = page.locator('[data-kind="assistant"][data-status="complete"] .code-block');
    await block.waitFor();
    expect(await block.locator(".code-lang").innerText()).toBe("js");
    await block.scrollIntoViewIfNeeded();
    const head = (await block.locator(".code-head").boundingBox())!;
    const code = (await block.locator("pre").boundingBox())!;
    expect(head.y + head.height).toBeLessThanOrEqual(code.y + 0.5);
    const copied = await clipboardAfter(page, () => block.getByRole("button", { name: "Copy code" }).click());
    expect(copied.startsWith("const a = 1;")).toBe(true);
    await page.close();
  }, 60_000);
});
