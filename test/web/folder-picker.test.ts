/**
 * The folder picker of a new session (#33), in Debian's Chromium against a real gateway: with
 * workspace roots the draft offers them; the user browses one level at a time (only real folders
 * inside the roots: a symlink out is not offered) and the session is created in the folder chosen
 * (its stored cwd); axe finds nothing serious with the panel open. A profile without roots shows
 * no picker (first-contact.test.ts runs such a gateway; here the picker is checked absent there too).
 */
import { createRequire } from "node:module";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { chromiumAvailable, ensureWebBuilt, launchBrowser, openApp, screenshot, send, sessionIdOf, type Browser } from "./browser.js";

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

async function seriousAxe(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    const w = window as unknown as { axe: { run(ctx: Document, opts: unknown): Promise<{ violations: Array<{ id: string; impact: string | null }> }> } };
    const r = await w.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id);
  });
}

const root = realpathSync(mkdtempSync(join(tmpdir(), "tether-web-folders-")));
const outside = realpathSync(mkdtempSync(join(tmpdir(), "tether-web-outside-")));

describe.skipIf(!chromiumAvailable)("web client: the folder picker of a new session", () => {
  let srv: TestServer;
  let plain: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    for (const d of ["proj", "proj/app", "docs"]) mkdirSync(join(root, d));
    symlinkSync(outside, join(root, "escape"));
    await ensureWebBuilt();
    srv = await startTestServer({ demoDelayMs: 1, config: { tools: { workspace: { roots: [root] } } } as never });
    plain = await startTestServer({ demoDelayMs: 1 });
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
    await plain?.close();
  });

  it("browses the operator's roots and creates the session in the folder chosen", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    const picker = page.getByTestId("folder-picker");
    const current = picker.getByRole("button", { name: "No folder" }).first();
    await current.click();
    const panel = page.getByRole("group", { name: "Choose a folder" });
    await panel.getByRole("button", { name: root }).click();
    await expect.poll(() => panel.locator(".folder-list button").allInnerTexts()).toEqual(["Up", "docs", "proj"]);
    await panel.getByRole("button", { name: "proj" }).click();
    await expect.poll(() => panel.locator(".folder-list button").allInnerTexts()).toEqual(["Up", "app"]);
    await panel.getByRole("button", { name: "app" }).click();
    await expect.poll(() => panel.locator(".folder-path").innerText()).toBe(join(root, "proj", "app"));
    expect(await seriousAxe(page)).toEqual([]);
    await screenshot(page, "20-folder-picker-desktop");
    await panel.getByRole("button", { name: "Use this folder" }).click();
    await expect.poll(() => picker.locator(".folder-current").innerText()).toBe("Folder: app");
    expect(await panel.count()).toBe(0);

    await send(page, "hello");
    const id = await sessionIdOf(page);
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    const db = new Database(srv.dbPath, { readonly: true });
    const row = JSON.parse((db.prepare("SELECT flags FROM sessions WHERE id = ?").get(id) as { flags: string }).flags) as { cwd?: string };
    db.close();
    expect(row.cwd).toBe(join(root, "proj", "app"));
    await page.close();
  }, 60_000);

  it("Esc closes the panel; a gateway without workspace roots shows no picker", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await page.getByTestId("folder-picker").getByRole("button", { name: "No folder" }).click();
    const panel = page.getByRole("group", { name: "Choose a folder" });
    await panel.getByRole("button", { name: root }).focus();
    await page.keyboard.press("Escape");
    expect(await panel.count()).toBe(0);
    await page.close();

    const other = await browser.page();
    await openApp(other, plain.url);
    await other.getByTestId("welcome").waitFor();
    await other.waitForTimeout(300);
    expect(await other.getByTestId("folder-picker").count()).toBe(0);
    await other.close();
  }, 60_000);
});
