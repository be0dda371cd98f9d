/**
 * Browser tests' support: Debian's Chromium (`/usr/bin/chromium`, never a downloaded browser)
 * driven by playwright-core, a fresh profile per launch, and the web client built when stale.
 * Without Chromium the suites are skipped VISIBLY (a warning names what to install).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { startTestServer, type TestServer, type TestServerOptions } from "../support/start-server.js";

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

/**
 * A suite's gateway and browser: before its tests, the page is built, a gateway started with
 * `opts` and Chromium launched, and both handed to `use`; after them, both closed.
 */
export function browserSuite(opts: TestServerOptions, use: (srv: TestServer, browser: Browser) => void): void {
  let srv: TestServer | undefined;
  let browser: Browser | undefined;
  beforeAll(async () => {
    await ensureWebBuilt();
    srv = await startTestServer(opts);
    browser = await launchBrowser();
    use(srv, browser);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });
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

/**
 * Waits until no CSS transition runs (a drawer sliding in, a fade): boxes measured before that are
 * where the element passes, not where it stays, and a loaded machine stretches a 0.18 s slide.
 */
export async function transitionsDone(page: Page): Promise<void> {
  await page.waitForFunction(() => document.getAnimations().every((a) => !(a instanceof CSSTransition) || a.playState === "finished"));
}

/** Opens the page and waits until the client reports a connected gateway. */
export async function openApp(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
}

/**
 * Clicks "New session": the page shows a new session's composer (a draft, focused); nothing is
 * created on the gateway until the first send (`startSession`, or `send` then `sessionIdOf`).
 */
export async function newSession(page: Page): Promise<void> {
  // On a phone the sessions list is a drawer: open it first. Asked by the toggle's state, not by
  // whether the button shows: mid-slide it may not, and a second click would close the drawer.
  const toggle = page.getByRole("button", { name: "Sessions", exact: true });
  if ((await toggle.isVisible()) && (await toggle.getAttribute("aria-expanded")) !== "true") await toggle.click();
  await page.getByTestId("new-session").click();
  await page.waitForFunction(() => !location.hash.startsWith("#/s/") && document.activeElement?.id === "composer-input");
}

/** The id of the session the page shows (from the URL hash), once it has one. */
export async function sessionIdOf(page: Page): Promise<string> {
  await page.waitForFunction(() => location.hash.startsWith("#/s/"));
  return decodeURIComponent(new URL(page.url()).hash.slice("#/s/".length));
}

/** A new session started by its first prompt: returns its id (created by that send). */
export async function startSession(page: Page, text: string): Promise<string> {
  await newSession(page);
  await send(page, text);
  return sessionIdOf(page);
}

/** Opens a sidebar row's ⋯ menu and picks `action` (Rename, Archive, Download, Close session…, Reopen, Delete…). */
export async function rowAction(row: Locator, action: string): Promise<void> {
  await row.getByRole("button", { name: /^More actions for / }).click();
  await row.getByRole("menuitem", { name: action, exact: true }).click();
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
