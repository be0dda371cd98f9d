/**
 * The web client end to end: Debian's Chromium (playwright-core) against a real gateway (demo
 * provider) serving the built page at `/`. Screenshots of the main screens go to
 * TETHER_SCREENSHOT_DIR (`npm run screenshots:web` → docs/screenshots), else a temp folder.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { startTestServer, tempDbPath, type TestServer } from "../support/start-server.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { chromiumAvailable, ensureWebBuilt, launchBrowser, newSession, openApp, startSession, pickModel, screenshot, send, shownModel, transitionsDone, type Browser } from "./browser.js";

const PHONE = { width: 390, height: 844 };

function countText(n: number): string {
  return Array.from({ length: n }, (_, i) => String(i + 1)).join(" ");
}

/** The visible text of every assistant block, in order. */
async function assistantTexts(page: Page): Promise<string[]> {
  return page.locator('[data-kind="assistant"] .md').allInnerTexts();
}

describe.skipIf(!chromiumAvailable)("web client in Chromium", () => {
  let srv: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    await ensureWebBuilt();
    srv = await startTestServer({
      demoDelayMs: 15,
      config: {
        // A second, guarded model (never called: the switch is what is tested).
        providers: { up: { base_url: "http://127.0.0.1:9/v1", models: ["small", "big"] } },
        default_provider: "demo",
        models: { require_confirmation: ["big"], confirm_message: "big is billed per token. Switch anyway?" },
      },
    });
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  it("serves the page at / with the right headers, and no path traversal", async () => {
    const res = await fetch(`${srv.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
    const html = await res.text();
    const asset = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(asset).toBeTruthy();
    const js = await fetch(`${srv.url}${asset}`);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(js.headers.get("cache-control")).toContain("immutable");
    for (const bad of ["/assets/..%2f..%2fpackage.json", "/assets/%2e%2e/%2e%2e/package.json", "/assets/.build-stamp", "/assets/nope.js"]) {
      const r = await fetch(`${srv.url}${bad}`);
      expect(r.status, bad).toBe(404);
      expect(await r.text()).not.toContain('"name": "tether"');
    }
  });

  it("streams a reply as Markdown, with the connection indicator and a readable phone layout", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await screenshot(page, "01-welcome-desktop");
    await newSession(page);
    await send(page, "count to 40");
    // Streaming: some text shows before the reply is complete.
    await page.locator('[data-kind="assistant"][data-status="streaming"]').waitFor();
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    expect(await assistantTexts(page)).toEqual([countText(40)]);
    expect(await page.locator('[data-kind="user"]').allInnerTexts()).toEqual(["count to 40"]);
    await send(page, "Here is **bold** and `code` <script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\">");
    await page.locator('[data-kind="assistant"][data-status="complete"]').nth(1).waitFor();
    // Model output is sanitized: no script ran, no raw HTML element made it in.
    expect(await page.evaluate(() => (window as { pwned?: number }).pwned)).toBeUndefined();
    expect(await page.locator('[data-kind="assistant"] img, [data-kind="assistant"] script').count()).toBe(0);
    await screenshot(page, "02-chat-desktop");
    await page.emulateMedia({ colorScheme: "dark" });
    await screenshot(page, "02-chat-dark-desktop");
    await page.setViewportSize(PHONE);
    await transitionsDone(page); // the sidebar's slide-out
    await screenshot(page, "03-chat-dark-phone");
    await page.emulateMedia({ colorScheme: "light" });
    await screenshot(page, "03-chat-phone");
    // The closed drawer is hidden: no shadow band at the edge, nothing of it in the Tab order.
    const nav = page.getByRole("navigation", { name: "Sessions", includeHidden: true });
    expect(await nav.evaluate((el) => [getComputedStyle(el).visibility, (el as HTMLElement & { inert?: boolean }).inert])).toEqual(["hidden", true]);
    await page.getByRole("button", { name: "Sessions" }).click();
    await page.getByRole("navigation", { name: "Sessions" }).getByRole("button", { name: "New session" }).waitFor();
    await transitionsDone(page);
    await screenshot(page, "04-sessions-phone");
    await page.close();
  });

  it("shows the todo panel and a collapsible tool card", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await newSession(page);
    await send(page, "todo: write the spec; build it; ship it");
    const panel = page.getByRole("complementary", { name: "Todo list" });
    await panel.waitFor();
    expect(await panel.locator(".todo-text").allInnerTexts()).toEqual(["write the spec", "build it", "ship it"]);
    const card = page.locator('[data-kind="tool"]');
    await card.locator('[data-state="done"], :scope[data-state="done"]').or(page.locator('[data-kind="tool"][data-state="done"]')).first().waitFor();
    await card.locator("summary").click();
    await expect.poll(() => card.locator(".tool-label").allInnerTexts()).toEqual(["ARGUMENTS", "RESULT"]);
    await screenshot(page, "05-todo-tool-desktop");
    await page.close();
  });

  it("shows an error card titled by its layer; Regenerate replaces the failed reply and keeps it as a previous version", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await newSession(page);
    await send(page, "fail: provider/rate_limited");
    const card = page.locator('[data-kind="error"]');
    await card.waitFor();
    expect(await card.locator(".card-title").innerText()).toBe("Provider error");
    expect(await card.getAttribute("data-code")).toBe("rate_limited");
    await expect.poll(() => card.locator(".diag").innerText()).toMatch(/turn turn_[\s\S]*trace [0-9a-f]{32}/);
    await screenshot(page, "06-error-desktop");
    const firstTurn = await card.locator(".diag").innerText();
    await card.getByRole("button", { name: "Regenerate" }).click();
    // A new turn on the same message, shown in the failed one's place: the prompt once, one card.
    const versions = page.getByTestId("versions");
    await expect.poll(() => versions.locator(".versions-count").innerText()).toBe("2 / 2");
    await expect.poll(() => card.locator(".diag").innerText()).not.toBe(firstTurn);
    expect(await page.locator('[data-kind="error"]').count()).toBe(1);
    expect(await page.locator('[data-kind="user"]').allInnerTexts()).toEqual(["fail: provider/rate_limited"]);
    // The old reply is kept as the previous version; its Regenerate is used up.
    await versions.getByRole("button", { name: "Previous version" }).click();
    await expect.poll(() => versions.locator(".versions-count").innerText()).toBe("1 / 2");
    expect(await card.locator(".diag").innerText()).toBe(firstTurn);
    expect(await card.getByRole("button", { name: "Regenerate" }).count()).toBe(0);
    // "Switch model" opens the model menu.
    await versions.getByRole("button", { name: "Next version" }).click();
    await card.getByRole("button", { name: "Switch model" }).click();
    await page.getByRole("listbox", { name: "Models" }).waitFor();
    await page.keyboard.press("Escape");
    await expect.poll(() => page.getByRole("listbox", { name: "Models" }).count()).toBe(0);
    await page.close();
  });

  it("asks before switching to a guarded model (confirm_required round trip)", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    // A session's model switch (a draft's model is picked before it exists: nothing to switch).
    await startSession(page, "count to 2");
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    // /v1/models marks the guarded model (what the lock is drawn from).
    const listed = (await (await fetch(`${srv.url}/v1/models`)).json()) as { data: Array<{ id: string; requires_confirmation?: boolean }> };
    expect(listed.data.filter((m) => m.requires_confirmation).map((m) => m.id)).toEqual(["big"]);
    expect(await shownModel(page)).toBe("demo");
    // Grouped by provider, a lock on the guarded model.
    await page.getByTestId("model-button").click();
    const menu = page.getByRole("listbox", { name: "Models" });
    expect(await menu.getByRole("group").evaluateAll((gs) => gs.map((g) => g.getAttribute("aria-label")))).toEqual(["demo", "up"]);
    expect(await menu.getByRole("group", { name: "up" }).getByRole("option").evaluateAll((os) => os.map((o) => o.getAttribute("aria-label")))).toEqual([
      "small",
      "big (asks for confirmation)",
    ]);
    await page.keyboard.press("Escape");
    await pickModel(page, "big");
    const dialog = page.getByRole("alertdialog");
    await dialog.waitFor();
    expect(await dialog.innerText()).toContain("big is billed per token. Switch anyway?");
    await screenshot(page, "07-confirm-model-desktop");
    await dialog.getByRole("button", { name: "Cancel" }).click();
    expect(await shownModel(page)).toBe("demo");
    await pickModel(page, "big");
    await page.getByRole("alertdialog").getByRole("button", { name: "Switch to big" }).click();
    await expect.poll(() => shownModel(page)).toBe("big");
    await page.getByText("Model switched to big").waitFor();
    await page.close();
  });

  it("shows a prompt sent during a turn as queued, and Esc interrupts the running turn", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await newSession(page);
    await send(page, "count to 400");
    await page.locator('[data-kind="assistant"][data-status="streaming"]').waitFor();
    await send(page, "count to 2");
    await page.locator('[data-kind="pending"][data-status="queued"]').waitFor();
    await page.getByRole("button", { name: "Stop" }).waitFor();
    await screenshot(page, "09-queued-desktop");
    await page.keyboard.press("Escape");
    await page.locator('[data-kind="assistant"][data-status="interrupted"]').waitFor();
    // The queued prompt then runs: its bubble becomes a real user message, shown once.
    await expect.poll(async () => (await assistantTexts(page))[1], { timeout: 10_000 }).toBe("1 2");
    expect(await page.locator('[data-kind="pending"]').count()).toBe(0);
    expect(await page.locator('[data-kind="user"]').allInnerTexts()).toEqual(["count to 400", "count to 2"]);
    await page.close();
  });

  it("while offline the page says so at once: the reply paused, Stop disabled, the composer honest, words on a phone", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await newSession(page);
    await page.setViewportSize(PHONE);
    await send(page, "count to 600");
    await page.locator('[data-kind="assistant"][data-status="streaming"]').waitFor();
    const conn = page.getByTestId("connection");
    expect(await conn.locator(".conn-short").innerText()).toBe("Live");
    const t0 = Date.now();
    await browser.context.setOffline(true);
    await page.getByTestId("paused-badge").waitFor({ timeout: 2000 });
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(await page.getByTestId("paused-badge").innerText()).toBe("paused — reconnecting");
    expect(await conn.getAttribute("data-state")).not.toBe("connected");
    // On a phone the pill has words, not a bare coloured dot.
    expect(await conn.locator(".conn-short").innerText()).toMatch(/Offline|Retrying/);
    expect(await page.getByRole("button", { name: "Stop" }).isDisabled()).toBe(true);
    expect(await page.getByLabel("Message").getAttribute("placeholder")).toMatch(/^(Offline|Reconnecting) — what you send now goes out when/);
    // The caret stopped.
    expect(await page.locator(".md.streaming.paused").count()).toBe(1);
    await browser.context.setOffline(false);
    await page.locator('[data-testid="connection"][data-state="connected"]').waitFor({ timeout: 15_000 });
    await expect.poll(() => page.getByTestId("paused-badge").count(), { timeout: 15_000 }).toBe(0);
    await page.getByRole("button", { name: "Stop" }).click();
    await page.getByTestId("interrupted-badge").waitFor();
    expect(await page.getByTestId("interrupted-badge").innerText()).toBe("You stopped this");
    await page.close();
  });

  it("two tabs on one session show the same live stream", async () => {
    const a = await browser.page();
    await openApp(a, srv.url);
    // A session exists from its first prompt on: the second tab opens it while the second reply streams.
    const id = await startSession(a, "count to 1");
    await a.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    const b = await browser.page();
    await openApp(b, `${srv.url}/#/s/${encodeURIComponent(id)}`);
    await b.getByLabel("Message").waitFor();
    await send(a, "count to 25");
    await b.locator('[data-kind="assistant"][data-status="streaming"]').waitFor();
    for (const p of [a, b]) await p.locator('[data-kind="assistant"][data-status="complete"]').nth(1).waitFor();
    expect(await assistantTexts(a)).toEqual([countText(1), countText(25)]);
    expect(await assistantTexts(b)).toEqual([countText(1), countText(25)]);
    await a.close();
    await b.close();
  });

  it("after dropped connections the transcript is exact: the text once, nothing missing", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await newSession(page);
    await send(page, "count to 120");
    await page.locator('[data-kind="assistant"][data-status="streaming"]').waitFor();
    for (let i = 0; i < 3; i++) {
      await page.waitForTimeout(150);
      srv.dropConnections();
      await page.locator('[data-testid="connection"]:not([data-state="connected"])').waitFor();
    }
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor({ timeout: 20_000 });
    await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
    expect(await assistantTexts(page)).toEqual([countText(120)]);
    expect(await page.locator('[data-kind="user"]').count()).toBe(1);
    await page.close();
  });
});

describe.skipIf(!chromiumAvailable)("web client across a gateway restart", () => {
  const running: SpawnedGateway[] = [];
  afterAll(async () => {
    for (const g of running.splice(0)) await g.kill("SIGKILL");
  });
  const start = async (db: string, port: number) => {
    const g = await spawnGateway(["--port", String(port), "--db", db], { TETHER_DEMO_DELAY_MS: "15" });
    running.push(g);
    return g;
  };

  it("SIGKILL mid-stream, then start: paused while down, recovered by itself, nothing shown before lost, no block twice, the restart label from the gateway", async () => {
    await ensureWebBuilt();
    const db = tempDbPath();
    const g1 = await start(db, 0);
    const port = Number(new URL(g1.url).port);
    const browser = await launchBrowser();
    try {
      const page = await browser.page();
      await openApp(page, g1.url);
      await newSession(page);
      await send(page, "count to 3");
      await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
      await send(page, "count to 2000");
      // Past the first ~500 ms checkpoint of the streaming text.
      await expect.poll(async () => (await assistantTexts(page))[1]?.length ?? 0, { timeout: 10_000 }).toBeGreaterThan(250);
      // A stalled gateway (stopped, its sockets open): the page notices by itself within seconds.
      process.kill(g1.child.pid!, "SIGSTOP");
      try {
        await page.getByTestId("paused-badge").waitFor({ timeout: 9000 });
        expect(await page.getByRole("button", { name: "Stop" }).isDisabled()).toBe(true);
      } finally {
        process.kill(g1.child.pid!, "SIGCONT");
      }
      await page.locator('[data-testid="connection"][data-state="connected"]').waitFor({ timeout: 20_000 });
      await expect.poll(() => page.getByTestId("paused-badge").count(), { timeout: 10_000 }).toBe(0);
      await g1.kill("SIGKILL");
      await page.locator('[data-testid="connection"]:not([data-state="connected"])').waitFor();
      const seenBefore = (await assistantTexts(page))[1]!;
      // While the gateway is down the reply says it is paused, on the reply itself; Stop cannot act.
      const reply = page.locator('[data-kind="assistant"]').nth(1);
      await reply.getByTestId("paused-badge").waitFor();
      expect(await reply.getAttribute("data-paused")).toBe("true");
      expect(await reply.getByTestId("paused-badge").innerText()).toBe("paused — reconnecting");
      expect(await page.getByRole("button", { name: "Stop" }).isDisabled()).toBe(true);
      expect(await page.getByLabel("Message").getAttribute("placeholder")).toBe("Reconnecting — what you send now goes out when the gateway is back");
      const g2 = await start(db, port);
      await page.locator('[data-testid="connection"][data-state="connected"]').waitFor({ timeout: 20_000 });
      const interrupted = page.locator('[data-kind="assistant"][data-status="interrupted"]');
      await interrupted.waitFor({ timeout: 20_000 });
      await interrupted.getByTestId("interrupted-badge").waitFor();
      expect(await interrupted.getByTestId("interrupted-badge").innerText()).toBe("Cut off by a gateway restart");
      const texts = await assistantTexts(page);
      expect(texts).toHaveLength(2);
      expect(texts[0]).toBe(countText(3));
      // The interrupted text is what the store kept (a prefix of the count), never doubled.
      expect(countText(2000).startsWith(texts[1]!)).toBe(true);
      expect(seenBefore.length).toBeGreaterThan(250);
      // Nothing the page showed before the crash vanished: a delta reaches a viewer only once it is
      // durable, so the recovered reply holds all of it (the same text, or more).
      expect(texts[1]!.startsWith(seenBefore)).toBe(true);
      expect(await page.locator('[data-kind="user"]').allInnerTexts()).toEqual(["count to 3", "count to 2000"]);
      await screenshot(page, "08-after-restart-desktop");
      // The label is the gateway's (the stored stop reason): a reload that forgot everything says the same.
      await page.evaluate(() => localStorage.clear());
      await page.reload();
      await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
      await expect.poll(() => page.getByTestId("interrupted-badge").innerText()).toBe("Cut off by a gateway restart");
      expect((await assistantTexts(page))[1]).toBe(texts[1]);
      // The page keeps working against the new process.
      await send(page, "count to 5");
      await expect.poll(async () => (await assistantTexts(page))[2], { timeout: 10_000 }).toBe(countText(5));
      await page.close();
      await g2.kill("SIGTERM");
    } finally {
      await browser.close();
    }
  }, 90_000);
});

describe.skipIf(!chromiumAvailable)("web client with an API key", () => {
  it("asks for the key once, refuses a wrong one, and keeps the right one in the browser", async () => {
    await ensureWebBuilt();
    const srv = await startTestServer({ apiKey: "s3cret-key" });
    const browser = await launchBrowser();
    try {
      // The page itself needs no key; the API does.
      expect((await fetch(`${srv.url}/`)).status).toBe(200);
      expect((await fetch(`${srv.url}/v1/models`)).status).toBe(401);
      const page = await browser.page();
      await page.goto(srv.url);
      const key = page.getByLabel("API key");
      await key.fill("wrong");
      await key.press("Enter");
      await page.getByText("That API key was refused.").waitFor();
      await screenshot(page, "10-api-key-desktop");
      await key.fill("s3cret-key");
      await page.getByRole("button", { name: "Connect" }).click();
      await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
      await page.reload();
      await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
      expect(await page.evaluate(() => localStorage.getItem("tether.apiKey"))).toBe("s3cret-key");
      // Settings: the key can be forgotten (the key screen comes back, nothing kept).
      await page.getByRole("button", { name: "Settings" }).click();
      await page.getByRole("dialog", { name: "Settings" }).getByRole("button", { name: "Forget the key" }).click();
      await page.getByLabel("API key").waitFor();
      expect(await page.evaluate(() => localStorage.getItem("tether.apiKey"))).toBeNull();
      await page.close();
    } finally {
      await browser.close();
      await srv.close();
    }
  });
});
