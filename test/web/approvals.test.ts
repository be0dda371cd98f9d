/**
 * Approvals in the web client, with Debian's Chromium against a real gateway and the SDK-built MCP
 * test server: an `ask` tool's request is a card (the tool, its arguments, the four choices), it is
 * still there after a reload, and answering it runs the tool and finishes the turn. The screenshot
 * goes to TETHER_SCREENSHOT_DIR (docs/screenshots), else a temp folder.
 */
import { mkdirSync, mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { readLog, stdioTestServer, tempLog } from "../support/mcp-fixture.js";
import { browserSuite, chromiumAvailable, newSession, openApp, screenshot, send, type Browser } from "./browser.js";

const log = tempLog();

describe.skipIf(!chromiumAvailable)("web client: approvals", () => {
  let srv: TestServer;
  let browser: Browser;
  browserSuite({ demoDelayMs: 0, config: { mcp_servers: { notes: stdioTestServer({ MCP_TEST_LOG: log }) } } }, (s, b) => {
    srv = s;
    browser = b;
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

  it("a terminal approval shows the whole command (its tail too) and the folder it runs in (#27)", async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "tether-web-ws-")));
    const ws = await startTestServer({ demoDelayMs: 0, config: { tools: { workspace: { roots: [root] } } } as never });
    try {
      // The session's folder is set by its creator (the page has no folder picker): one below the root.
      mkdirSync(join(root, "project"));
      const created = await fetch(`${ws.url}/api/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ cwd: join(root, "project") }) });
      const { session_id } = (await created.json()) as { session_id: string };
      const page = await browser.page();
      await openApp(page, `${ws.url}/#/s/${encodeURIComponent(session_id)}`);
      await page.getByLabel("Message").waitFor();
      const command = `echo '${"harmless ".repeat(60).trim()}'; touch X`;
      await send(page, `call: terminal ${JSON.stringify({ command })}`);
      const card = page.locator(".request-card");
      await card.waitFor({ timeout: 20_000 });
      expect(await card.locator(".request-head").innerText()).toBe("Approve terminal?");
      const shown = card.getByLabel("Command");
      expect(await shown.innerText()).toBe(command);
      // Wrapped, not cut or scrolled away: nothing of it lies outside its box.
      const box = await shown.evaluate((el) => ({ sw: el.scrollWidth, cw: el.clientWidth, sh: el.scrollHeight, ch: el.clientHeight }));
      expect(box.sw).toBeLessThanOrEqual(box.cw);
      expect(box.sh).toBeLessThanOrEqual(box.ch);
      await shown.getByText("; touch X").waitFor({ state: "visible" });
      expect(await card.getByLabel("Folder").innerText()).toBe(join(root, "project"));
      await screenshot(page, "13-approval-terminal");
      await card.getByRole("button", { name: "Deny" }).click();
      await page.locator(".request-card").waitFor({ state: "detached", timeout: 20_000 });
    } finally {
      await ws.close();
    }
  });
});
