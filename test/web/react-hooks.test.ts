/**
 * React front ends in Chromium against a real gateway: `useChat` from @ai-sdk/react (unchanged,
 * over DefaultChatTransport to POST /api/chat) streams a reply and, after a reload mid-reply,
 * resumes it (`resume: true` → GET /api/chat/{id}/stream) with nothing twice; and the SDK's own
 * `useSession` hook shows a streamed turn and, after a reload, the same transcript.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { newClient } from "../client/client-support.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { reply, startFakeOpenAI, type FakeOpenAI, type StreamStep } from "../support/fake-openai-server.js";
import { chromiumAvailable, launchBrowser, type Browser } from "./browser.js";

/**
 * Chromium's Local Network Access checks treat a page answered by `route.fulfill` (no address it
 * came from) as public, and block its WebSocket to 127.0.0.1; the page is the gateway's origin in
 * every other respect (its Origin and Host are the gateway's own), so the check is turned off.
 */
const LNA_OFF = ["--disable-features=LocalNetworkAccessChecks"];

let srv: TestServer;
let browser: Browser;
let bundle = "";

const PAGE = "/__react-test/index.html";
const count = (n: number) => Array.from({ length: n }, (_, i) => i + 1).join(" ");

beforeAll(async () => {
  const esbuild = await import("esbuild");
  const out = await esbuild.build({
    entryPoints: [new URL("./pages/react-page.ts", import.meta.url).pathname],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    target: "es2022",
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "warning",
  });
  bundle = out.outputFiles[0]!.text;
  srv = await startTestServer({ demoDelayMs: 15 });
  if (chromiumAvailable) browser = await launchBrowser({ args: LNA_OFF });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await srv?.close();
});

/** The page on the gateway's origin: its script and HTML come from the test, every other request goes to the gateway. */
async function reactPage(query: string, on: TestServer = srv): Promise<Page> {
  const page = await browser.page();
  await page.route(`${on.url}/__react-test/**`, (route) => {
    const js = route.request().url().endsWith(".js");
    return route.fulfill({
      status: 200,
      contentType: js ? "text/javascript" : "text/html",
      body: js ? bundle : `<!doctype html><meta charset="utf-8"><div id="root"></div><script type="module" src="/__react-test/page.js"></script>`,
    });
  });
  await page.goto(`${on.url}${PAGE}?${query}`);
  return page;
}

const assistantText = (page: Page) => page.locator('.msg[data-role="assistant"]').allTextContents();

describe.skipIf(!chromiumAvailable)("useChat (@ai-sdk/react) in Chromium", () => {
  // The model is a local OpenAI-compatible server that holds the long reply where the test says:
  // the reload happens while the reply runs, and the rest is sent once the reloaded page has
  // resumed the stream (no reply long enough to outlast a reload on a loaded machine).
  let upstream: FakeOpenAI;
  let chatSrv: TestServer;
  beforeAll(async () => {
    upstream = await startFakeOpenAI();
    chatSrv = await startTestServer({ providerUrl: upstream.url });
  });
  afterAll(async () => {
    await chatSrv?.close();
    await upstream?.close();
  });

  it("streams a reply, then after a reload mid-reply resumes it: the stored text, nothing twice", async () => {
    const chunks = (n: number) => count(n).split(/(?= )/);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    upstream.script(
      reply.text(chunks(5)),
      reply.stream([
        { type: "delta", delta: { role: "assistant", content: "" } },
        ...chunks(1500).map((content, i): StreamStep[] => (i === 10 ? [{ type: "wait", until: held }, { type: "delta", delta: { content } }] : [{ type: "delta", delta: { content } }])).flat(),
        { type: "finish", reason: "stop" },
        { type: "done" },
      ]),
    );
    const id = `chat-${randomUUID()}`;
    const page = await reactPage(`mode=ai&id=${id}`, chatSrv);
    await page.locator('[data-testid="chat"][data-status="ready"]').waitFor({ state: "attached" });
    await page.evaluate(() => window.tetherTest!.send("count to 5"));
    await page.locator('[data-testid="chat"][data-status="ready"] .msg[data-role="assistant"]').waitFor({ timeout: 30_000 });
    expect(await assistantText(page)).toEqual([count(5)]);

    // The long reply, held after its tenth chunk: reload while it streams.
    await page.evaluate(() => window.tetherTest!.send("count to 1500"));
    await page.waitForFunction(() => (document.querySelector('.msg[data-role="assistant"]:last-child')?.textContent ?? "").startsWith("1 2 3 4 5 6 7 8 9 10"), undefined, { timeout: 30_000 });
    const before = (await assistantText(page)).at(-1)!;
    expect(before).toBe(count(10));
    await page.reload();
    // The resumed message: it streams on from the first chunk (replayed after the reload)…
    await page.waitForFunction((prefix) => (document.querySelector('.msg[data-role="assistant"]')?.textContent ?? "").startsWith(prefix), count(10), { timeout: 30_000 });
    expect(await page.locator('[data-testid="chat"]').getAttribute("data-status")).not.toBe("ready");
    // …to the end, once the model goes on.
    release();
    await page.waitForFunction((full) => document.querySelector('.msg[data-role="assistant"]')?.textContent === full, count(1500), { timeout: 60_000 });
    await page.locator('[data-testid="chat"][data-status="ready"]').waitFor({ state: "attached", timeout: 30_000 });
    expect(await assistantText(page)).toEqual([count(1500)]);
    expect(await page.locator('[data-testid="chat"]').getAttribute("data-error")).toBe("");
    expect(upstream.requests).toHaveLength(2);

    // What the store holds is the same text, once.
    const reader = newClient(chatSrv.wsUrl);
    await reader.connect();
    const { sessions } = await reader.call("session.list", { include_ended: true });
    const texts: string[] = [];
    for (const s of sessions) {
      const { messages } = await reader.call("session.messages", { session_id: s.session_id });
      texts.push(...messages.filter((m) => m.role === "assistant").map((m) => m.content));
    }
    expect(texts.filter((t) => t === count(1500))).toHaveLength(1);
    await reader.close();
    await page.close();
  }, 240_000);
});

describe.skipIf(!chromiumAvailable)("useSession (tether-gateway-react) in Chromium", () => {
  it("shows a streamed turn from the hook, and the same transcript after a reload", async () => {
    const node = newClient(srv.wsUrl);
    await node.connect();
    const { session_id } = await node.createSession({});
    await node.close();
    const page = await reactPage(`mode=session&sid=${session_id}`);
    await page.locator('[data-testid="session"][data-link="connected"][data-loading="false"]').waitFor({ state: "attached", timeout: 30_000 });
    await page.evaluate(() => window.tetherTest!.send("count to 20"));
    await page.waitForFunction((full) => document.querySelector('.block[data-kind="assistant"]')?.textContent === full, count(20), { timeout: 30_000 });
    await page.locator('[data-testid="session"][data-running="false"][data-pending="0"]').waitFor({ state: "attached", timeout: 30_000 });
    const blocks = async () => page.locator(".block").evaluateAll((els) => els.map((e) => `${e.getAttribute("data-kind")}:${e.textContent}`));
    const live = await blocks();
    expect(live).toEqual(["user:count to 20", `assistant:${count(20)}`]);
    await page.reload();
    await page.locator('[data-testid="session"][data-link="connected"][data-loading="false"] .block').first().waitFor({ timeout: 30_000 });
    expect(await blocks()).toEqual(live);
    await page.close();
  }, 120_000);
});
