/**
 * Accessibility of every view (#33), in Debian's Chromium against a real gateway: axe-core (the
 * package's own source injected into the page) finds nothing serious or critical on the first
 * screen, a chat with a code block and a tool card, the ⋯ menu, Settings, the shortcuts help, an
 * approval card and the phone drawer, in light and dark; dialogs keep Tab inside and close on Esc;
 * a skip link is the first Tab stop; dark primary buttons reach 4.5:1; Stop is named by its label.
 */
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import type { TestServer } from "../support/start-server.js";
import { readLog, stdioTestServer, tempLog } from "../support/mcp-fixture.js";
import { browserSuite, chromiumAvailable, openApp, send, startSession, type Browser } from "./browser.js";

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const log = tempLog();

interface Finding {
  id: string;
  impact: string | null;
  nodes: string[];
}

/** axe-core's serious and critical violations on the page as it is now. */
async function axe(page: Page): Promise<Finding[]> {
  // Evaluated over the DevTools protocol: the page's CSP (script-src 'self') refuses an inline script tag.
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE_SOURCE);
  const found = await page.evaluate(async () => {
    const w = window as unknown as { axe: { run(ctx: Document, opts: unknown): Promise<{ violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: unknown[] }> }> }> } };
    const r = await w.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => JSON.stringify(n.target)) }));
  });
  return found.filter((v) => v.impact === "serious" || v.impact === "critical");
}

async function clean(page: Page, view: string): Promise<void> {
  // Colours mid-transition (a theme switch, a drawer sliding in) are not the page's: wait them out.
  await page.waitForFunction(() => document.getAnimations().every((a) => a.playState !== "running" || a.effect?.getComputedTiming().endTime === Infinity));
  expect(await axe(page), view).toEqual([]);
}

/** WCAG contrast of an element's text on its background. */
function contrast(page: Page, selector: string): Promise<number> {
  return page.evaluate((sel) => {
    const lum = (rgb: string) => {
      const [r, g, b] = (rgb.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number).map((v) => {
        const c = v / 255;
        return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
    };
    const st = getComputedStyle(document.querySelector(sel)!);
    const [a, b] = [lum(st.color), lum(st.backgroundColor)];
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  }, selector);
}

const focused = (page: Page) => page.evaluate(() => document.activeElement?.closest("[role=dialog]")?.getAttribute("aria-labelledby") ?? document.activeElement?.id ?? "");

describe.skipIf(!chromiumAvailable)("web client accessibility (#33)", () => {
  let srv: TestServer;
  let browser: Browser;
  browserSuite({ demoDelayMs: 3, config: { mcp_servers: { notes: stdioTestServer({ MCP_TEST_LOG: log }) } } }, (s, b) => {
    srv = s;
    browser = b;
  });

  it("axe finds nothing serious on any view, light and dark; dialogs hold focus and close on Esc", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await page.getByTestId("welcome").waitFor();
    await clean(page, "first screen");
    // The skip link is the first Tab stop of the page and lands in the message box.
    const firstStop = await page.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>("a[href], button, input, textarea, [tabindex]")).find((e) => e.tabIndex >= 0)?.textContent);
    expect(firstStop).toBe("Skip to the message box");
    await page.getByRole("link", { name: "Skip to the message box" }).focus();
    await page.keyboard.press("Enter");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("composer-input");

    await startSession(page, "show code:\n```js\nconst a = 1;\n```");
    await page.locator('[data-kind="assistant"][data-status="complete"] .code-block').waitFor();
    await send(page, "todo: plan; build");
    await page.locator('[data-kind="tool"]').first().waitFor();
    await page.locator('[data-kind="assistant"][data-status="complete"]').nth(1).waitFor();
    // Code blocks take focus (a keyboard can scroll them).
    expect(await page.locator(".code-block pre").first().getAttribute("tabindex")).toBe("0");
    await page.locator('[data-kind="tool"] summary').first().click();
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await clean(page, `chat (${scheme})`);
    }
    // Dark mode's primary button: at least 4.5:1 (white on #818cf8 was 2.98:1).
    await page.getByLabel("Message").fill("x");
    expect(await contrast(page, ".composer .btn-primary")).toBeGreaterThanOrEqual(4.5);
    await page.getByLabel("Message").fill("");
    await page.emulateMedia({ colorScheme: "light" });

    // Stop: its accessible name is its label.
    await send(page, "count to 3000");
    const stop = page.getByRole("button", { name: "Stop", exact: true });
    await stop.waitFor();
    await clean(page, "streaming");
    await stop.click();
    await page.locator('[data-kind="assistant"][data-status="interrupted"]').waitFor();

    // The ⋯ menu.
    await page.locator(".session").first().getByRole("button", { name: /^More actions for / }).click();
    await page.getByRole("menu").waitFor();
    await clean(page, "session menu");
    await page.keyboard.press("Escape");
    await expect.poll(() => page.getByRole("menu").count()).toBe(0);

    // Settings: focus inside, Tab never leaves it, Esc closes it and focus comes back.
    await page.getByRole("button", { name: "Settings" }).click();
    const dialog = page.getByRole("dialog", { name: "Settings" });
    await dialog.waitFor();
    await clean(page, "settings");
    for (let i = 0; i < 25; i++) {
      await page.keyboard.press("Tab");
      expect(await focused(page), `Tab ${i + 1}`).toBe("settings-title");
    }
    await page.keyboard.press("Shift+Tab");
    expect(await focused(page)).toBe("settings-title");
    await page.keyboard.press("Escape");
    await expect.poll(() => dialog.count()).toBe(0);
    // Focus is given back once the dialog is gone (a render later, on a loaded machine).
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute("aria-label"))).toBe("Settings");

    // The shortcuts help.
    await page.getByRole("button", { name: "Keyboard shortcuts" }).click();
    await page.getByRole("dialog", { name: "Keyboard shortcuts" }).waitFor();
    await clean(page, "help");
    await page.keyboard.press("Escape");
    await page.close();
  });

  it("an approval card (key/value arguments, a reason) and the phone drawer are clean too; a denial's reason reaches the model", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await startSession(page, 'call: notes__write_note {"key": "web", "value": "from the browser"}');
    const card = page.locator(".request-card");
    await card.waitFor({ timeout: 20_000 });
    // The arguments as a key/value table, not JSON.
    expect(await card.getByTestId("args-table").locator("tr").allInnerTexts()).toEqual(["key\tweb", "value\tfrom the browser"]);
    await clean(page, "approval");
    await card.getByLabel("Reason if you deny (optional)").fill("not in this folder");
    await card.getByRole("button", { name: "Deny" }).click();
    await page.getByText('notes__write_note returned: {"error":"denied by the user: not in this folder"}').waitFor({ timeout: 20_000 });
    expect(readLog(log).filter((e) => e.tool === "write_note" && e.key === "web")).toHaveLength(0);

    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole("button", { name: "Sessions" }).click();
    await page.getByRole("navigation", { name: "Sessions" }).getByTestId("new-session").waitFor();
    await clean(page, "phone drawer");
    await page.close();
  });
});
