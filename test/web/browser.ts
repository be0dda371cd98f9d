/**
 * Browser tests' support: Debian's Chromium (`/usr/bin/chromium`, never a downloaded browser)
 * driven by playwright-core, a fresh profile per launch, and the web client built when stale.
 * Without Chromium the suites are skipped VISIBLY (a warning names what to install).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";

export const CHROMIUM_PATH = process.env.TETHER_CHROMIUM ?? "/usr/bin/chromium";
export const chromiumAvailable = existsSync(CHROMIUM_PATH);
if (!chromiumAvailable) {
  console.warn(`[tether tests] ${CHROMIUM_PATH} not found: web client browser suites are SKIPPED (apt-get install chromium)`);
}

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Builds web/dist when it is missing or older than its sources (a few seconds, once). */
export async function ensureWebBuilt(): Promise<void> {
  const { buildWeb } = await import("../../web/build.mjs");
  await buildWeb({ quiet: true });
}

export interface Browser {
  context: BrowserContext;
  page(opts?: { width?: number; height?: number }): Promise<Page>;
  close(): Promise<void>;
}

/** Chromium with a fresh `--user-data-dir` (a persistent context on a new temp folder); `args`: more flags. */
export async function launchBrowser(opts: { args?: string[] } = {}): Promise<Browser> {
  const userDataDir = mkdtempSync(join(tmpdir(), "tether-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [...CHROMIUM_ARGS, ...(opts.args ?? [])],
    viewport: { width: 1280, height: 820 },
  });
  const errors: string[] = [];
  return {
    context,
    async page(opts = {}) {
      const page = await context.newPage();
      if (opts.width) await page.setViewportSize({ width: opts.width, height: opts.height ?? 820 });
      page.on("pageerror", (err) => errors.push(String(err)));
      return page;
    },
    async close() {
      await context.close().catch(() => undefined);
      rmSync(userDataDir, { recursive: true, force: true });
      if (errors.length > 0) throw new Error(`uncaught errors in the page:\n${errors.join("\n")}`);
    },
  };
}

/** Where screenshots go: TETHER_SCREENSHOT_DIR (e.g. docs/screenshots), else a temp folder. */
export const SCREENSHOT_DIR = process.env.TETHER_SCREENSHOT_DIR ?? join(tmpdir(), "tether-web-screenshots");

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path });
  return path;
}

/** Opens the page and waits until the client reports a connected gateway. */
export async function openApp(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
}

/** Clicks "+ New session" and returns the new session's id (from the URL hash). */
export async function newSession(page: Page): Promise<string> {
  const before = page.url();
  await page.getByRole("button", { name: "+ New session" }).click();
  await page.waitForFunction((prev) => location.href !== prev && location.hash.startsWith("#/s/"), before);
  await page.getByLabel("Message").waitFor();
  return decodeURIComponent(new URL(page.url()).hash.slice("#/s/".length));
}

/** Types `text` into the composer and sends it (Enter). */
export async function send(page: Page, text: string): Promise<void> {
  const box = page.getByLabel("Message");
  await box.fill(text);
  await box.press("Enter");
}

/** The model the top bar's model menu shows. */
export async function shownModel(page: Page): Promise<string | null> {
  return page.getByTestId("model-button").getAttribute("data-model");
}

/** Opens the model menu and picks `id` (a guarded model then asks first). */
export async function pickModel(page: Page, id: string): Promise<void> {
  await page.getByTestId("model-button").click();
  await page.getByRole("listbox", { name: "Models" }).locator(`[role="option"][data-model="${id}"]`).click();
}
