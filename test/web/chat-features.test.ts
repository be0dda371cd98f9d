/**
 * What every chat app has, in Debian's Chromium against a real gateway (demo provider): suggestion
 * chips, the context meter, jump to latest, cancel and edit a queued prompt, settings (theme, the
 * open session's system prompt, a system prompt for new sessions), shortcuts and their help overlay — and accessibility: a live
 * region that announces a finished reply only, only a new error as an alert, a heading, badge
 * contrast of at least 4.5:1 in both themes (computed here), focus where the user expects it.
 */
import { describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import type { TestServer } from "../support/start-server.js";
import { browserSuite, chromiumAvailable, newSession, openApp, screenshot, send, startSession, type Browser } from "./browser.js";

const activeId = (page: Page) => page.evaluate(() => document.activeElement?.id || document.activeElement?.getAttribute("aria-label") || "");

/** WCAG contrast of every badge kind (text on its own background), in the page's current theme. */
function badgeContrasts(page: Page): Promise<Record<string, number>> {
  return page.evaluate(() => {
    const lum = (rgb: string) => {
      const [r, g, b] = (rgb.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number).map((v) => {
        const c = v / 255;
        return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
    };
    const host = document.querySelector(".transcript-inner")!;
    const out: Record<string, number> = {};
    for (const kind of ["ok", "run", "queued", "warn", "error"]) {
      const el = document.createElement("span");
      el.className = `badge badge-${kind}`;
      el.textContent = kind;
      host.appendChild(el);
      const st = getComputedStyle(el);
      const [a, b] = [lum(st.color), lum(st.backgroundColor)];
      out[kind] = Math.round(((Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)) * 100) / 100;
      el.remove();
    }
    return out;
  });
}

describe.skipIf(!chromiumAvailable)("web client chat features and accessibility in Chromium", () => {
  let srv: TestServer;
  let browser: Browser;

  // A compression cap, so the demo model (no context window) has a point to measure against.
  browserSuite({ demoDelayMs: 4, config: { compression: { threshold_tokens: 100_000 } } }, (s, b) => {
    srv = s;
    browser = b;
  });

  it("chips, context meter, announcer, jump to latest, queued prompts cancelled and edited, alerts and focus", async () => {
    const page = await browser.page({ width: 1100, height: 560 });
    await openApp(page, srv.url);
    await newSession(page);
    // Focus goes to the composer when a session opens; the chat view has a heading.
    expect(await activeId(page)).toBe("composer-input");
    expect(await page.getByRole("heading", { level: 1 }).count()).toBe(1);

    await page.getByRole("group", { name: "Suggestions" }).getByRole("button", { name: /count to 20/ }).click();
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    const announcer = page.getByTestId("announcer");
    await expect.poll(() => announcer.innerText()).toBe("Reply finished (20 words)");
    // The context meter: the last turn's tokens against where compression starts.
    const context = page.getByTestId("context");
    expect(await context.innerText()).toMatch(/^Context \d+ \/ 100,000 tokens \(\d+%\)$/);
    expect(Number(await context.getByRole("meter").getAttribute("aria-valuenow"))).toBeGreaterThan(0);

    for (let i = 0; i < 3; i++) {
      await send(page, `count to ${60 + i}`);
      await expect.poll(() => page.locator('[data-kind="assistant"][data-status="complete"]').count()).toBe(i + 2);
    }
    expect(await activeId(page)).toBe("composer-input"); // still there after sending
    await send(page, "count to 1500");
    await page.locator('[data-kind="assistant"][data-status="streaming"]').waitFor();
    // While it streams the live region is not read word by word: it still says the last finished reply.
    expect(await announcer.innerText()).toBe("Reply finished (62 words)");
    // Queued prompts: Edit changes one in its place (it keeps its turn), Cancel drops another.
    await send(page, "count to 7");
    await send(page, "count to 9");
    const queued = page.locator('[data-kind="pending"][data-status="queued"]');
    await expect.poll(() => queued.count()).toBe(2);
    await queued.first().getByRole("button", { name: "Edit" }).click();
    const editor = page.getByLabel("Edit queued prompt");
    await editor.fill("count to 8");
    await editor.press("Escape"); // Esc leaves the editor unchanged
    expect(await queued.allInnerTexts()).toEqual([expect.stringContaining("count to 7"), expect.stringContaining("count to 9")]);
    await queued.first().getByRole("button", { name: "Edit" }).click();
    await editor.fill("count to 8");
    await page.getByRole("button", { name: "Save" }).click();
    await expect.poll(() => queued.first().locator(".user-text").innerText()).toBe("count to 8");
    expect(await queued.nth(1).locator(".user-text").innerText()).toBe("count to 9");
    await queued.nth(1).getByRole("button", { name: "Cancel" }).click();
    await expect.poll(() => queued.count()).toBe(1);
    // Scrolled up while it streams: a button brings the reply back.
    await page.getByRole("log", { name: "Transcript" }).evaluate((el) => el.scrollTo({ top: 0 }));
    const jump = page.getByRole("button", { name: "Jump to latest" });
    await jump.waitFor();
    await screenshot(page, "14-jump-to-latest-desktop");
    await jump.click();
    await expect
      .poll(() => page.getByRole("log", { name: "Transcript" }).evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight))
      .toBeLessThan(80);
    // The edited prompt ran as edited, right after the turn it queued behind; the cancelled one never ran.
    await page.locator('[data-kind="assistant"]').nth(5).and(page.locator('[data-status="complete"]')).waitFor({ timeout: 20_000 });
    await page.waitForTimeout(300);
    expect(await page.locator('[data-kind="user"]').allInnerTexts()).toEqual(["count to 20", "count to 60", "count to 61", "count to 62", "count to 1500", "count to 8"]);

    // A new error is an alert; the same card rebuilt on reopening is not (no re-announcing).
    await send(page, "fail: provider/rate_limited");
    const card = page.locator('[data-kind="error"]');
    await card.waitFor();
    expect(await card.getAttribute("role")).toBe("alert");
    await page.reload();
    await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
    await card.waitFor();
    expect(await card.getAttribute("role")).toBe("group");
    expect(await page.locator('[role="alert"]').count()).toBe(0);

    // Badge contrast, light and dark.
    const light = await badgeContrasts(page);
    await page.evaluate(() => (document.documentElement.dataset["theme"] = "dark"));
    const dark = await badgeContrasts(page);
    await page.evaluate(() => delete document.documentElement.dataset["theme"]);
    for (const [kind, ratio] of Object.entries({ ...Object.fromEntries(Object.entries(light).map(([k, v]) => [`light ${k}`, v])), ...Object.fromEntries(Object.entries(dark).map(([k, v]) => [`dark ${k}`, v])) })) {
      expect(ratio, `${kind} badge contrast`).toBeGreaterThanOrEqual(4.5);
    }
    await page.close();
  }, 90_000);

  it("a client tool's call is a card of its own; the page answers it once, with an error", async () => {
    const made = await fetch(`${srv.url}/api/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_tools: [{ name: "pick_color", description: "asks the user's app for a colour" }] }),
    });
    const id = ((await made.json()) as { session_id: string }).session_id;
    const page = await browser.page();
    await openApp(page, `${srv.url}/#/s/${encodeURIComponent(id)}`);
    await page.getByLabel("Message").waitFor();
    await send(page, 'call: pick_color {"hint": "sky"}');
    const card = page.getByRole("group", { name: "Client tool call" });
    await card.waitFor({ timeout: 20_000 });
    expect(await card.locator(".request-head").innerText()).toBe("Waiting for pick_color — a tool the client that declared it runs");
    expect(await card.getByTestId("args-table").locator("tr").allInnerTexts()).toEqual(["hint\tsky"]);
    const answer = card.getByRole("button", { name: "Answer with an error" });
    await answer.click();
    await card.waitFor({ state: "detached", timeout: 20_000 });
    await expect.poll(() => page.locator('[data-kind="assistant"]').last().getAttribute("data-status"), { timeout: 20_000 }).toBe("complete");
    await page.close();
  });

  it("settings (theme, the session's own system prompt, a system prompt for new sessions), shortcuts and their help overlay, focus back after a dialog", async () => {
    const page = await browser.page();
    const created: string[] = [];
    page.on("websocket", (ws) =>
      ws.on("framesent", (f) => {
        const text = typeof f.payload === "string" ? f.payload : f.payload.toString();
        if (text.includes('"session.create"')) created.push(text);
      }),
    );
    await openApp(page, srv.url);
    // A session to have settings of its own (a draft has none yet).
    await startSession(page, "count to 2");
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();

    const settings = page.getByRole("button", { name: "Settings" });
    await settings.click();
    const dialog = page.getByRole("dialog", { name: "Settings" });
    await dialog.waitFor();
    // Focus moves in once the dialog's effect ran (after its first paint).
    await expect.poll(() => page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.name)).toBe("theme");
    await dialog.getByLabel("Dark").check();
    expect(await page.evaluate(() => document.documentElement.dataset["theme"])).toBe("dark");
    await dialog.getByLabel("System prompt (empty: the profile's)", { exact: true }).fill("Answer like a pirate.");
    // The open session's own system prompt, where the gateway allows it; its profile is shown, fixed.
    const own = dialog.getByTestId("session-settings");
    expect(await own.innerText()).toContain("Profile default");
    await own.getByLabel("This session's system prompt (empty: the profile's)").fill("Be brief.");
    await own.getByRole("button", { name: "Save for this session" }).click();
    await page.getByText("System prompt saved: used from the next reply").waitFor();
    await screenshot(page, "15-settings-desktop");
    await dialog.getByRole("button", { name: "Done" }).click();
    await expect.poll(() => dialog.count()).toBe(0);
    await expect.poll(() => activeId(page)).toBe("Settings");
    // The theme is kept by the browser.
    await page.reload();
    await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
    expect(await page.evaluate(() => document.documentElement.dataset["theme"])).toBe("dark");
    expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).not.toBe("rgb(246, 247, 251)");
    // The session's prompt is the gateway's (its Snapshot): the reloaded page shows it.
    await settings.click();
    await expect.poll(() => dialog.getByTestId("session-settings").getByRole("textbox").inputValue()).toBe("Be brief.");
    await dialog.getByRole("button", { name: "Done" }).click();
    await expect.poll(() => dialog.count()).toBe(0);

    // Shortcuts: Ctrl+Shift+O opens a new session (created by its first send, with the system
    // prompt), Ctrl+K searches, Shift+Esc goes back to the composer, ? lists them; Esc closes the
    // list, focus goes back.
    await page.keyboard.press("Control+Shift+O");
    await page.waitForFunction(() => !location.hash.startsWith("#/s/"));
    await send(page, "count to 2");
    await expect.poll(() => created.some((t) => t.includes('"system_prompt":"Answer like a pirate."'))).toBe(true);
    // The new session is open (its reply shows): opening it puts the focus in its composer, which
    // would otherwise race the shortcut below.
    await page.waitForFunction(() => location.hash.startsWith("#/s/"));
    await page.locator('[data-kind="assistant"]').first().waitFor();
    await page.keyboard.press("Control+k");
    await expect.poll(() => activeId(page)).toBe("session-search");
    await page.keyboard.press("Shift+Escape");
    await expect.poll(() => activeId(page)).toBe("composer-input");
    await settings.focus();
    await page.keyboard.press("?");
    const help = page.getByRole("dialog", { name: "Keyboard shortcuts" });
    await help.waitFor();
    expect(await help.innerText()).toContain("New session");
    await screenshot(page, "16-shortcuts-dark-desktop");
    await page.keyboard.press("Escape");
    await expect.poll(() => help.count()).toBe(0);
    await expect.poll(() => activeId(page)).toBe("Settings");
    // Back to the system theme for the next page.
    await page.evaluate(() => localStorage.removeItem("tether.theme"));
    await page.close();
  }, 60_000);
});
