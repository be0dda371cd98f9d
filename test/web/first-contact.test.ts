/**
 * Issue #33 in Debian's Chromium against a real gateway (demo provider):
 * - first contact: the page opens on a focused message box with a one-line welcome; New session
 *   (button or Ctrl+Shift+O) creates nothing on the gateway; the first send creates the session;
 * - usage and the context meter come from the server: after a reload and in another browser;
 * - the sidebar: a row is its title (ellipsis, whole on hover), a dot only while a reply runs, the
 *   actions in a ⋯ menu (keyboard: → opens it, Esc closes it), one Tab stop per row, no lifecycle
 *   words, and no overlap on a 390×844 phone.
 */
import { describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import type { TestServer } from "../support/start-server.js";
import { browserSuite, chromiumAvailable, launchBrowser, newSession, openApp, send, sessionIdOf, startSession, transitionsDone, type Browser } from "./browser.js";

const focusedId = (page: Page) => page.evaluate(() => document.activeElement?.id ?? "");

describe.skipIf(!chromiumAvailable)("web client: first contact, usage from the server, the sidebar (#33)", () => {
  let srv: TestServer;
  let browser: Browser;

  const serverSessions = async (): Promise<string[]> => {
    const res = await fetch(`${srv.url}/api/sessions?include_ended=true`);
    const body = (await res.json()) as { sessions: Array<{ session_id: string }> };
    return body.sessions.map((s) => s.session_id);
  };

  browserSuite({ demoDelayMs: 4, config: { compression: { threshold_tokens: 100_000 } } }, (s, b) => {
    srv = s;
    browser = b;
  });

  it("opens on a focused message box; New session creates nothing until the first send", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    // The first screen is the composer, focused, with one line on what Tether is.
    await page.getByTestId("welcome").waitFor();
    await expect.poll(() => focusedId(page)).toBe("composer-input");
    expect(await page.getByTestId("welcome").innerText()).toMatch(/^Tether keeps every reply/);
    expect(await page.getByRole("button", { name: "Start a session" }).count()).toBe(0);
    expect(await serverSessions()).toEqual([]);

    // New session, by click and by shortcut: still a draft, nothing on the gateway.
    await newSession(page);
    await page.keyboard.press("Control+Shift+O");
    await expect.poll(() => focusedId(page)).toBe("composer-input");
    expect(await serverSessions()).toEqual([]);
    expect(await page.locator(".session").count()).toBe(0);

    // The first send creates the session and runs the prompt in it.
    await send(page, "count to 3");
    const id = await sessionIdOf(page);
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    expect(await page.locator('[data-kind="user"]').allInnerTexts()).toEqual(["count to 3"]);
    expect(await serverSessions()).toEqual([id]);
    await expect.poll(() => page.locator(".session").count()).toBe(1);

    // Ctrl+Shift+O from a session: back to a draft, the session left as it was, none added.
    await page.keyboard.press("Control+Shift+O");
    await page.waitForFunction(() => !location.hash.startsWith("#/s/"));
    await expect.poll(() => focusedId(page)).toBe("composer-input");
    expect(await page.locator('[data-kind="user"]').count()).toBe(0);
    expect(await serverSessions()).toEqual([id]);
    await page.close();
  });

  it("shows each reply's usage and the context meter after a reload and in another browser", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    const id = await startSession(page, "count to 12");
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    const usage = page.getByTestId("usage");
    const context = page.getByTestId("context");
    await usage.waitFor();
    const live = { usage: await usage.innerText(), context: await context.innerText() };
    expect(live.usage).toMatch(/^\d+ in · \d+ out$/);
    expect(live.context).toMatch(/^Context \d+ \/ 100,000 tokens \(\d+%\)$/);
    // Stored with the message: the transcript read over HTTP carries it.
    const stored = (await (await fetch(`${srv.url}/api/sessions/${encodeURIComponent(id)}/messages`)).json()) as { messages: Array<{ role: string; usage?: unknown }> };
    expect(stored.messages.find((m) => m.role === "assistant")?.usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) });

    await page.reload();
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    await expect.poll(() => usage.innerText()).toBe(live.usage);
    await expect.poll(() => context.innerText()).toBe(live.context);

    // Another browser (a fresh profile: nothing of the first one's memory).
    const other = await launchBrowser();
    try {
      const p2 = await other.page();
      await openApp(p2, `${srv.url}/#/s/${encodeURIComponent(id)}`);
      await p2.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
      await expect.poll(() => p2.getByTestId("usage").innerText()).toBe(live.usage);
      await expect.poll(() => p2.getByTestId("context").innerText()).toBe(live.context);
    } finally {
      await other.close();
    }
    await page.close();
  });

  it("sidebar rows: the title whole on hover, a dot only while a reply runs, a ⋯ menu, one Tab stop, no lifecycle words", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    const long = "Please count for me all the way up to three thousand, one number at a time, slowly";
    const id = await startSession(page, long);
    const row = page.locator(`.session[data-session-id="${id}"]`);
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    await expect.poll(() => row.getAttribute("data-activity")).toBe(null);
    // A dot while the reply runs, none once it is done.
    await send(page, "count to 3000");
    await page.locator('[data-kind="assistant"][data-status="streaming"]').waitFor();
    await expect.poll(() => row.getAttribute("data-activity")).toBe("on");
    await page.locator('[data-kind="assistant"][data-status="complete"]').nth(1).waitFor({ timeout: 60_000 });
    await expect.poll(() => row.getAttribute("data-activity")).toBe(null);
    expect(await row.getByTestId("activity").count()).toBe(0);

    // The title: cut with an ellipsis on one line, whole in the tooltip; no gateway words.
    const title = row.locator(".session-title");
    const full = (await title.innerText()).trim();
    expect(full.length).toBeGreaterThan(40);
    expect(await title.evaluate((el) => [getComputedStyle(el).textOverflow, el.scrollWidth > el.clientWidth])).toEqual(["ellipsis", true]);
    expect(await row.locator(".session-main").getAttribute("title")).toBe(full);
    expect(await row.innerText()).toBe(full);
    for (const word of ["Open", "In the background", "Paused", "Closed"]) expect(await page.locator(".sidebar").innerText()).not.toContain(word);

    // One Tab stop per row.
    const stops = await row.evaluate((el) => Array.from(el.querySelectorAll<HTMLElement>("button, a, input, [tabindex]")).filter((e) => e.tabIndex >= 0).length);
    expect(stops).toBe(1);

    // Keyboard: → opens the row's menu on its first item; Esc closes it, back on the row.
    await row.locator(".session-main").focus();
    await page.keyboard.press("ArrowRight");
    const menu = row.getByRole("menu");
    await menu.waitFor();
    expect(await menu.getByRole("menuitem").allInnerTexts()).toEqual(["Rename", "Archive", "Download", "Close session…", "Delete…"]);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Rename");
    await page.keyboard.press("ArrowDown");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Archive");
    await page.keyboard.press("Escape");
    await expect.poll(() => menu.count()).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.classList.contains("session-main"))).toBe(true);
    // A click elsewhere closes it too.
    await row.getByRole("button", { name: /^More actions for / }).click();
    await menu.waitFor();
    await page.locator(".composer").click();
    await expect.poll(() => menu.count()).toBe(0);
    await page.close();
  });

  it("a long pasted prompt shows cut with Show more, whole after it", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    const pasted = Array.from({ length: 40 }, (_, i) => `line ${i + 1} of a long paste`).join("\n");
    await startSession(page, pasted);
    const bubble = page.locator('[data-kind="user"] .user-text');
    await bubble.waitFor();
    const cut = (await bubble.boundingBox())!.height;
    const more = page.getByRole("button", { name: "Show more" });
    expect(await more.getAttribute("aria-expanded")).toBe("false");
    await more.click();
    await page.getByRole("button", { name: "Show less" }).waitFor();
    const whole = (await bubble.boundingBox())!.height;
    expect(whole).toBeGreaterThan(cut * 3);
    // A short prompt has no such button.
    await send(page, "count to 2");
    await expect.poll(() => page.locator('[data-kind="user"]').count()).toBe(2);
    expect(await page.getByRole("button", { name: /^Show (more|less)$/ }).count()).toBe(1);
    await page.close();
  });

  it("on a 390×844 phone the rows never overlap and the ⋯ never covers a title", async () => {
    const page = await browser.page({ width: 390, height: 844 });
    await openApp(page, srv.url);
    for (const n of [2, 3]) await startSession(page, `count to ${n} and a title long enough to need an ellipsis on a phone`);
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    await page.getByRole("button", { name: "Sessions" }).click();
    await page.getByRole("navigation", { name: "Sessions" }).getByTestId("new-session").waitFor();
    await expect.poll(() => page.locator(".session").count()).toBeGreaterThanOrEqual(2);
    await transitionsDone(page); // the drawer's slide: measured mid-way, a row sticks out of the screen
    const boxes = await page.locator(".session").evaluateAll((rows) =>
      rows.map((r) => {
        const box = (el: Element | null) => {
          const b = el!.getBoundingClientRect();
          return { x: b.x, y: b.y, w: b.width, h: b.height };
        };
        return { row: box(r), title: box(r.querySelector(".session-title")), more: box(r.querySelector(".session-more-btn")) };
      }),
    );
    const overlap = (a: { x: number; y: number; w: number; h: number }, b: typeof a) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
    for (let i = 0; i < boxes.length; i++) {
      const r = boxes[i]!;
      expect(overlap(r.title, r.more)).toBe(false);
      expect(r.more.w).toBeGreaterThan(0); // shown on a touch screen (no hover there)
      expect(r.row.x + r.row.w).toBeLessThanOrEqual(390);
      for (let j = i + 1; j < boxes.length; j++) expect(overlap(r.row, boxes[j]!.row)).toBe(false);
    }
    await page.close();
  });
});
