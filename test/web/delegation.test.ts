/**
 * Delegations (background sub-agents) in the web client, end to end: Debian's Chromium
 * (playwright-core) against a real gateway with the demo provider. `delegate: A; B` makes the demo
 * model call `delegate_task` with one task per goal; `/review` starts a reviewer. The page must show
 * a card per delegation (running → delivered, per task), the delivered result as a result card
 * (never a user bubble), and the same after a reload (from the Snapshot's `delegations[]` and
 * messages). The screenshot goes to TETHER_SCREENSHOT_DIR (docs/screenshots), else a temp folder.
 */
import { describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import type { TestServer } from "../support/start-server.js";
import { browserSuite, chromiumAvailable, newSession, openApp, screenshot, send, type Browser } from "./browser.js";

const GOALS = ["write a haiku", "check the spelling"];
const PROMPT = `delegate: ${GOALS.join("; ")}`;

/** The transcript's blocks, in order, by kind. */
async function blockKinds(page: Page): Promise<string[]> {
  return page.locator(".transcript-inner > [data-kind]").evaluateAll((els) => els.map((e) => e.getAttribute("data-kind") ?? ""));
}

/** What a delivered delegation looks like, live or after a reload. */
async function expectDelivered(page: Page): Promise<void> {
  const card = page.locator('[data-kind="delegation"][data-delegation-kind="delegate"]');
  await card.and(page.locator('[data-status="delivered"]')).waitFor({ timeout: 20_000 });
  expect(await card.locator(".card-title").innerText()).toBe("Sub-agents · 2 tasks");
  expect(await card.locator(".badge").innerText()).toBe("delivered");
  expect(await card.locator(".dlg-goal").allInnerTexts()).toEqual(GOALS);
  expect(await card.locator(".dlg-task").evaluateAll((els) => els.map((e) => e.getAttribute("data-status")))).toEqual(["completed", "completed"]);
  for (const state of await card.locator(".dlg-state").allInnerTexts()) expect(state).toMatch(/^done · \d+(\.\d)? (ms|s)$/);

  const result = page.locator('[data-kind="delegation-result"]');
  await result.waitFor();
  expect(await result.getAttribute("data-delegation-id")).toBe(await card.getAttribute("data-key"));
  expect(await result.locator(".card-title").innerText()).toBe("Sub-agent results");
  expect(await result.locator(".badge").innerText()).toBe("2/2 completed");
  // Rendered as Markdown (the numbered tasks are a list), without the model-facing head line.
  const body = result.locator(".md");
  expect(await body.locator("ol > li").count()).toBe(2);
  const text = await body.innerText();
  expect(text).toContain("write a haiku — completed");
  expect(text).toContain('You said: "check the spelling"');
  expect(text).not.toContain("[Background task complete");
  // Never a bubble the user typed: the only user bubble is the prompt.
  expect(await page.locator('[data-kind="user"]').allInnerTexts()).toEqual([PROMPT]);
  expect(await blockKinds(page)).toEqual(["user", "tool", "delegation", "assistant", "delegation-result"]);
}

describe.skipIf(!chromiumAvailable)("web client: delegations", () => {
  let srv: TestServer;
  let browser: Browser;

  // Paced so a sub-agent's reply (~20 chunks) runs for about a second: long enough to see it run.
  browserSuite({ demoDelayMs: 60 }, (s, b) => {
    srv = s;
    browser = b;
  });

  it("shows sub-agents running, then delivered, the result as a result card; the same after a reload", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await newSession(page);
    await send(page, PROMPT);

    // Running: the card names both goals; the tasks report running (delegation.progress).
    const card = page.locator('[data-kind="delegation"]');
    await card.and(page.locator('[data-status="running"]')).waitFor();
    expect(await card.locator(".dlg-goal").allInnerTexts()).toEqual(GOALS);
    await card.locator('.dlg-task[data-status="running"]').first().waitFor();
    expect(await card.locator(".badge").innerText()).toMatch(/^running · [0-2]\/2 done$/);
    expect(await page.locator('[data-kind="delegation-result"]').count()).toBe(0);

    await expectDelivered(page);
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    await screenshot(page, "11-delegation-desktop");

    // After a reload: the card from the Snapshot's delegations[], the result from its messages.
    await page.reload();
    await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
    await expectDelivered(page);
    await page.close();
  });

  it("titles a /review as a review, and its review arrives as a result card", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await newSession(page);
    await send(page, "count to 3");
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    await send(page, "/review check the counting");
    const card = page.locator('[data-kind="delegation"][data-delegation-kind="review"]');
    await card.waitFor();
    expect(await card.locator(".card-title").innerText()).toBe("Review");
    expect(await card.locator(".dlg-goal").innerText()).toContain("Focus: check the counting");
    await card.and(page.locator('[data-status="delivered"]')).waitFor({ timeout: 20_000 });
    const result = page.locator('[data-kind="delegation-result"][data-delegation-kind="review"]');
    await result.waitFor();
    expect(await result.locator(".card-title").innerText()).toBe("Review result");
    expect(await result.locator(".md").innerText()).toContain("check the counting");
    // What the user typed stays in the transcript, above the review's card, live and after a reload.
    expect(await page.locator('[data-kind="user"]').allInnerTexts()).toEqual(["count to 3", "/review check the counting"]);
    expect(await blockKinds(page)).toEqual(["user", "assistant", "user", "delegation", "delegation-result"]);
    await page.reload();
    await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
    await page.locator('[data-kind="delegation"][data-delegation-kind="review"][data-status="delivered"]').waitFor();
    expect(await page.locator('[data-kind="user"]').allInnerTexts()).toEqual(["count to 3", "/review check the counting"]);
    expect(await blockKinds(page)).toEqual(["user", "assistant", "user", "delegation", "delegation-result"]);
    await page.close();
  });
});
