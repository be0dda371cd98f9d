/**
 * Approvals in the web client, with Debian's Chromium against a real gateway and the SDK-built MCP
 * test server: an `ask` tool's request is a card (the tool, its arguments, the four choices), it is
 * still there after a reload, and answering it runs the tool and finishes the turn. The screenshot
 * goes to TETHER_SCREENSHOT_DIR (docs/screenshots), else a temp folder.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { readLog, stdioTestServer, tempLog } from "../support/mcp-fixture.js";
import { chromiumAvailable, ensureWebBuilt, launchBrowser, newSession, openApp, screenshot, send, type Browser } from "./browser.js";

const log = tempLog();

describe.skipIf(!chromiumAvailable)("web client: approvals", () => {
  let srv: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    await ensureWebBuilt();
    srv = await startTestServer({ demoDelayMs: 0, config: { mcp_servers: { notes: stdioTestServer({ MCP_TEST_LOG: log }) } } });
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  it("shows the request as a card with its tool, arguments and choices; keeps it across a reload; Approve once runs the tool", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await newSession(page);
    await send(page, 'call: notes__write_note {"key": "web", "value": "from the browser"}');
    const card = page.locator(".request-card");
    await card.waitFor({ timeout: 20_000 });
    expect(await card.locator(".request-head").innerText()).toBe("Approve notes__write_note?");
    // The arguments as a key/value table (not raw JSON).
    expect(await card.getByTestId("args-table").locator("tr").allInnerTexts()).toEqual(["key\tweb", "value\tfrom the browser"]);
    expect(await card.getByRole("button").allInnerTexts()).toEqual(["Approve once", "For this session", "Always", "Deny"]);
    // The call's tool card says what it waits for.
    await page.locator('[data-kind="tool"][data-state="awaiting"]').getByText("waiting for approval").waitFor();
    await screenshot(page, "12-approval-desktop");

    await page.reload();
    await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
    await page.locator(".request-card").waitFor({ timeout: 20_000 });
    expect(readLog(log).filter((e) => e.tool === "write_note" && e.key === "web")).toHaveLength(0);

    await page.locator(".request-card").getByRole("button", { name: "Approve once" }).click();
    await page.locator(".request-card").waitFor({ state: "detached", timeout: 20_000 });
    await page.getByText("notes__write_note returned: wrote web").waitFor({ timeout: 20_000 });
    expect(readLog(log).filter((e) => e.tool === "write_note" && e.key === "web")).toHaveLength(1);
  });
});
