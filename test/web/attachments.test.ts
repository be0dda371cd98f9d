/**
 * Issue #31 (the page's part) in Debian's Chromium against a real gateway (demo provider):
 * - an image pasted into the composer shows as a preview, is sent with the prompt as a part (the
 *   demo model's reply names it), and after a reload the user message shows it, loaded from
 *   `GET /api/blobs/{sha256}`;
 * - attachments past the page's cap (700 KiB together: they travel base64 in one WebSocket frame)
 *   are refused with a message and nothing is sent.
 */
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import type { TestServer } from "../support/start-server.js";
import { browserSuite, chromiumAvailable, openApp, sessionIdOf, type Browser } from "./browser.js";

/** A 1×1 PNG, 70 bytes. */
const PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/** Pastes a file into the composer: a ClipboardEvent whose DataTransfer holds it. */
async function pasteFile(page: Page, file: { name: string; type: string; base64?: string; size?: number }): Promise<void> {
  await page.getByLabel("Message").evaluate((el, f) => {
    const bytes = f.base64 ? Uint8Array.from(atob(f.base64), (c) => c.charCodeAt(0)) : new Uint8Array(f.size ?? 0);
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], f.name, { type: f.type }));
    el.dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
  }, file);
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** axe-core's serious and critical violations (as a11y.test.ts counts them), rule id and targets. */
async function axe(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    const w = window as unknown as { axe: { run(ctx: Document, opts: unknown): Promise<{ violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: unknown[] }> }> }> } };
    const r = await w.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  });
}

describe.skipIf(!chromiumAvailable)("web client: attachments (#31)", () => {
  let srv: TestServer;
  let browser: Browser;

  const serverSessions = async (): Promise<string[]> => {
    const res = await fetch(`${srv.url}/api/sessions?include_ended=true`);
    const body = (await res.json()) as { sessions: Array<{ session_id: string }> };
    return body.sessions.map((s) => s.session_id);
  };

  browserSuite({ demoDelayMs: 4 }, (s, b) => {
    srv = s;
    browser = b;
  });

  it("sends a pasted image with the prompt and shows it in the user message after a reload", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await pasteFile(page, { name: "dot.png", type: "image/png", base64: PNG_1X1 });
    const item = page.locator(".attach-tray .attach-item");
    await item.waitFor();
    expect(await item.innerText()).toContain("image/png · 70 B");
    expect(await page.getByRole("button", { name: "Remove dot.png" }).count()).toBe(1);

    const box = page.getByLabel("Message");
    await box.fill("what is this?");
    await box.press("Enter");
    const id = await sessionIdOf(page);
    // Cleared once sent.
    await expect.poll(() => page.locator(".attach-tray .attach-item").count()).toBe(0);
    const reply = page.locator('[data-kind="assistant"][data-status="complete"]');
    await reply.waitFor();
    expect(await reply.innerText()).toMatch(/attachments: image\/png 1×1 70 B sha256:[0-9a-f]{8}/);

    // Stored as a part of the user message, by sha256.
    const stored = (await (await fetch(`${srv.url}/api/sessions/${encodeURIComponent(id)}/messages`)).json()) as {
      messages: Array<{ role: string; parts?: Array<{ type: string; sha256?: string }> }>;
    };
    const sha = stored.messages.find((m) => m.role === "user")?.parts?.find((p) => p.type === "image")?.sha256;
    expect(sha).toMatch(/^[0-9a-f]{64}$/);

    await page.reload();
    const img = page.locator('[data-kind="user"] .msg-attachments img');
    await img.waitFor();
    await expect.poll(() => img.evaluate((el) => (el as HTMLImageElement).complete && (el as HTMLImageElement).naturalWidth)).toBe(1);
    expect(await page.locator('[data-kind="user"] .user-text').innerText()).toBe("what is this?");
    // The link opens it larger (a new tab), named for assistive technology.
    expect(await page.getByRole("link", { name: "Open image image/png 1×1 larger" }).count()).toBe(1);
    await page.close();
  });

  it("refuses attachments past the cap with a message, and sends nothing", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    const before = await serverSessions();
    await pasteFile(page, { name: "big.bin", type: "application/octet-stream", size: 800 * 1024 });
    await page.getByText(/Attachments are limited to 700\.0 KiB per message together/).waitFor();
    expect(await page.locator(".attach-tray .attach-item").count()).toBe(0);
    // The prompt goes without it; no part reached the gateway.
    const box = page.getByLabel("Message");
    await box.fill("no file");
    await box.press("Enter");
    const id = await sessionIdOf(page);
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    expect(await page.locator('[data-kind="assistant"]').innerText()).not.toContain("attachments:");
    const stored = (await (await fetch(`${srv.url}/api/sessions/${encodeURIComponent(id)}/messages`)).json()) as { messages: Array<{ role: string; parts?: unknown[] }> };
    expect(stored.messages.find((m) => m.role === "user")?.parts).toBeUndefined();
    expect((await serverSessions()).filter((s) => !before.includes(s))).toEqual([id]);
    await page.close();
  });

  it("the controls are named and axe finds nothing serious: composer previews, the picker, a file chip to download", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    expect(await page.getByLabel("Attach files").count()).toBe(1);
    await pasteFile(page, { name: "dot.png", type: "image/png", base64: PNG_1X1 });
    await pasteFile(page, { name: "notes.txt", type: "text/plain", base64: btoa("hello attachments") });
    await expect.poll(() => page.locator(".attach-tray .attach-item").count()).toBe(2);
    expect(await page.getByRole("button", { name: "Remove notes.txt" }).count()).toBe(1);
    expect(await axe(page)).toEqual([]);
    // Remove takes one out; the other is sent.
    await page.getByRole("button", { name: "Remove dot.png" }).click();
    await expect.poll(() => page.locator(".attach-tray .attach-item").count()).toBe(1);
    const box = page.getByLabel("Message");
    await box.fill("read this");
    await box.press("Enter");
    const reply = page.locator('[data-kind="assistant"][data-status="complete"]');
    await reply.waitFor();
    expect(await reply.innerText()).toMatch(/attachments: file notes\.txt text\/plain 17 B sha256:/);
    expect(await reply.innerText()).not.toContain("image/png");
    const chip = page.getByRole("link", { name: /^Download notes\.txt text\/plain/ });
    await chip.waitFor();
    await expect.poll(() => chip.getAttribute("href")).toMatch(/^blob:/);
    expect(await chip.getAttribute("download")).toBe("notes.txt");
    const download = await Promise.all([page.waitForEvent("download"), chip.click()]).then(([d]) => d);
    expect(download.suggestedFilename()).toBe("notes.txt");
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      // Colours mid-transition after the switch are not the page's: wait them out (as a11y.test.ts does).
      await page.waitForFunction(() => document.getAnimations().every((a) => a.playState !== "running" || a.effect?.getComputedTiming().endTime === Infinity));
      expect(await axe(page), scheme).toEqual([]);
    }
    await page.close();
  });
});
