/**
 * Background processes in the web client, with Debian's Chromium against a real gateway: a
 * session whose model started a background process shows it above the composer (command,
 * running, pid) from the SDK's SessionView, its output on demand (read on as the process writes
 * more), and Stop ends it.
 */
import { describe, expect, it } from "vitest";
import { mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { browserSuite, chromiumAvailable, openApp, screenshot, type Browser } from "./browser.js";

const work = realpathSync(mkdtempSync(join(tmpdir(), "tether-web-proc-")));

describe.skipIf(!chromiumAvailable)("web client: background processes", () => {
  let srv: TestServer;
  let browser: Browser;
  browserSuite({ demoDelayMs: 0, config: { tools: { workspace: { roots: [work] }, policy: { terminal: "auto" } } } as never }, (s, b) => {
    srv = s;
    browser = b;
  });

  it("lists the session's running process with its output, and Stop ends it", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id } = await sock.call("session.create", { cwd: work, title: "dev server" });
    // Prints more once the test creates ./go: that part reaches the open output pane only because
    // its process.output frames make the pane read on (nothing polls).
    const command = "echo web-output; while [ ! -f go ]; do sleep 0.1; done; echo more-output; sleep 60";
    await sock.call("prompt.submit", { session_id, text: `call: terminal ${JSON.stringify({ command, background: true })}` });
    const started = await sock.waitForEvent(session_id, (f) => f.type === "process.started", 20_000);
    await sock.waitForEvent(session_id, (f) => f.type === "turn.complete", 20_000);

    const page = await browser.page();
    await openApp(page, `${srv.url}/#/s/${encodeURIComponent(session_id)}`);
    // One line, closed, until asked: the processes never take the transcript's height unasked.
    const panel = page.getByRole("region", { name: "Background processes" });
    const toggle = panel.getByRole("button", { name: /^Background processes/ });
    await toggle.waitFor({ timeout: 20_000 });
    expect(await toggle.getAttribute("aria-expanded")).toBe("false");
    expect(await toggle.innerText()).toMatch(/Background processes\s+1 running/);
    expect((await panel.boundingBox())!.height).toBeLessThanOrEqual(40);
    await toggle.click();
    const row = page.locator(`.process[data-process-id="${started.payload.id}"]`);
    await row.waitFor({ timeout: 20_000 });
    expect(await row.getAttribute("data-status")).toBe("running");
    expect(await row.locator(".process-command").innerText()).toBe(command);
    expect(await row.locator(".process-status").innerText()).toBe(`running · pid ${started.payload.pid}`);

    await row.getByRole("button", { name: "Output" }).click();
    await row.locator(".process-output").getByText("web-output").waitFor({ timeout: 10_000 });
    writeFileSync(join(work, "go"), "");
    await page.waitForFunction((id) => document.querySelector(`.process[data-process-id="${id}"] .process-output`)?.textContent === "web-output\nmore-output\n", started.payload.id, { timeout: 10_000 });
    await screenshot(page, "13-processes-desktop");

    await row.getByRole("button", { name: "Stop" }).click();
    await page.locator(`.process[data-process-id="${started.payload.id}"][data-status="killed"]`).waitFor({ timeout: 10_000 });
    expect((await sock.call("process.list", { session_id })).processes[0].status).toBe("killed");
    sock.close();
    // A browser test under a loaded CI run: well clear of the default 30 s.
  }, 90_000);
});
