/**
 * The web client's session actions end to end, in Debian's Chromium (playwright-core) against a
 * real gateway: an error card that survives a reload (the stored `error` of the failed message),
 * Copy diagnostics, renaming, closing and reopening a session, and a model switch made while a
 * turn runs (`config.set` answers `pending`; it applies when the next turn starts). One gateway
 * and one browser for the whole file.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Locator, Page } from "playwright-core";
import type { Message } from "../../src/protocol/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";
import { chromiumAvailable, ensureWebBuilt, launchBrowser, newSession, openApp, pickModel, rowAction, screenshot, send, sessionIdOf, shownModel, startSession, type Browser } from "./browser.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

/** Reloads and waits until the transcript is rebuilt from the Snapshot. */
async function reload(page: Page): Promise<void> {
  await page.reload();
  await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
  await page.getByRole("log", { name: "Transcript" }).waitFor();
}

function sidebarItem(page: Page, sessionId: string): Locator {
  return page.locator(`.session[data-session-id="${sessionId}"]`);
}

/**
 * Runs `count to 3` as the session's first turn and returns its sidebar entry, once the session
 * is named after that first prompt (an untitled session is).
 */
async function firstTurn(page: Page): Promise<Locator> {
  await send(page, "count to 3");
  await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
  const item = sidebarItem(page, await sessionIdOf(page));
  await expect.poll(() => item.locator(".session-title").innerText()).toBe("count to 3");
  return item;
}

/** Everything an error card shows about its error. */
async function errorCardView(card: Locator) {
  return {
    layer: await card.getAttribute("data-layer"),
    code: await card.getAttribute("data-code"),
    retryable: await card.getAttribute("data-retryable"),
    title: await card.locator(".card-title").innerText(),
    shownCode: await card.locator(".error-code").innerText(),
    message: await card.locator(".error-message").innerText(),
    regenerateButton: await card.getByRole("button", { name: "Regenerate" }).count(),
    diag: (await card.locator(".diag").count()) > 0 ? await card.locator(".diag").innerText() : null,
  };
}

/** What the card's Copy diagnostics button puts on the clipboard. */
async function copiedDiagnostics(page: Page, card: Locator): Promise<Record<string, unknown>> {
  await page.evaluate(() => navigator.clipboard.writeText("nothing yet"));
  await card.getByRole("button", { name: "Copy diagnostics" }).click();
  await card.getByRole("button", { name: "Copied" }).waitFor();
  return JSON.parse(await page.evaluate(() => navigator.clipboard.readText())) as Record<string, unknown>;
}

describe.skipIf(!chromiumAvailable)("web client session actions in Chromium", () => {
  let srv: TestServer;
  let ai: FakeOpenAI;
  let browser: Browser;

  beforeAll(async () => {
    await ensureWebBuilt();
    ai = await startFakeOpenAI();
    srv = await startTestServer({
      demoDelayMs: 15,
      config: {
        // A second model, served by a scripted OpenAI-compatible server, to switch to.
        providers: { up: { base_url: ai.url, models: ["small"] } },
        default_provider: "demo",
      },
    });
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.close();
    await ai?.close();
  });

  it("shows the same error card (layer, code, retryable, turn and trace ids) after a reload", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(srv.url).origin });
    const id = await startSession(page, "fail: provider/rate_limited");
    const cards = page.locator('[data-kind="error"]');
    await cards.first().waitFor();
    await send(page, "fail: auth/unauthorized");
    await expect.poll(() => cards.count()).toBe(2);
    await expect.poll(() => cards.nth(1).getAttribute("data-code")).toBe("unauthorized");

    const live = [await errorCardView(cards.nth(0)), await errorCardView(cards.nth(1))];
    // Each live card names its turn and trace (from the frames); two turns, two pairs of ids.
    const ids = live.map((v) => {
      const m = /^turn (turn_\S+)\s+trace ([0-9a-f]{32})$/.exec(v.diag ?? "");
      expect(m, `diagnostics line: ${v.diag}`).not.toBeNull();
      return { turn_id: m![1]!, trace_id: m![2]! };
    });
    expect(ids[0]!.turn_id).not.toBe(ids[1]!.turn_id);
    expect(live).toEqual([
      {
        layer: "provider",
        code: "rate_limited",
        retryable: "true",
        title: "Provider error",
        shownCode: "rate_limited",
        message: "demo provider: simulated failure provider/rate_limited",
        // Not the newest exchange, and still offered: the gateway branches from any prompt.
        regenerateButton: 1,
        diag: expect.stringMatching(new RegExp(`^turn ${ids[0]!.turn_id}\\s+trace ${ids[0]!.trace_id}$`)),
      },
      {
        layer: "auth",
        code: "unauthorized",
        retryable: "false",
        title: "Authentication error",
        shownCode: "unauthorized",
        message: "demo provider: simulated failure auth/unauthorized",
        regenerateButton: 0,
        diag: expect.stringMatching(new RegExp(`^turn ${ids[1]!.turn_id}\\s+trace ${ids[1]!.trace_id}$`)),
      },
    ]);
    const liveCopied = await copiedDiagnostics(page, cards.nth(1));
    expect(liveCopied).toEqual({
      ...ids[1],
      layer: "auth",
      code: "unauthorized",
      retryable: false,
      message: "demo provider: simulated failure auth/unauthorized",
    });

    // The wire Message carries the stored error (what a reload rebuilds the card from).
    const res = await fetch(`${srv.url}/api/sessions/${encodeURIComponent(id)}/messages`);
    const { messages } = (await res.json()) as { messages: Message[] };
    const failed = messages.filter((m) => m.status === "error");
    expect(failed.map((m) => m.error)).toEqual([
      { layer: "provider", code: "rate_limited", retryable: true, message: "demo provider: simulated failure provider/rate_limited" },
      { layer: "auth", code: "unauthorized", retryable: false, message: "demo provider: simulated failure auth/unauthorized" },
    ]);
    // … and the ids of the turn that failed (lifted from the row's metadata, not repeated in it).
    expect(failed.map((m) => ({ turn_id: m.turn_id, trace_id: m.trace_id }))).toEqual(ids);
    expect(failed.every((m) => m.display_metadata === undefined)).toBe(true);

    await reload(page);
    await expect.poll(() => cards.count()).toBe(2);
    expect([await errorCardView(cards.nth(0)), await errorCardView(cards.nth(1))]).toEqual(live);
    // The rebuilt card copies what the live one did: the turn and trace ids are not null.
    expect(await copiedDiagnostics(page, cards.nth(1))).toEqual(liveCopied);
    expect(await page.locator('[data-kind="user"]').allInnerTexts()).toEqual(["fail: provider/rate_limited", "fail: auth/unauthorized"]);

    await page.close();
  });

  it("shows one error card for a turn that failed without a failed message (the iteration cap), and the same after a reload", async () => {
    // A gateway of its own whose cap (1 model call) ends a tool-calling turn before its answer.
    const capped = await startTestServer({ demoDelayMs: 5, config: { limits: { maxIterations: 1 } } });
    try {
      const page = await browser.page();
      await openApp(page, capped.url);
      const id = await startSession(page, "todo: plan");
      const cards = page.locator('[data-kind="error"]');
      await expect.poll(() => cards.getAttribute("data-code")).toBe("max_iterations");
      // The turn is over (its tool ran): still one card, from the live turn.error.
      await page.locator('[data-kind="tool"]').waitFor();
      expect(await cards.count()).toBe(1);
      const live = await errorCardView(cards.first());
      expect(live).toMatchObject({
        layer: "gateway",
        code: "max_iterations",
        retryable: "false",
        message: "the model kept calling tools: stopped after 1 steps",
        diag: expect.stringMatching(/^turn turn_\S+\s+trace [0-9a-f]{32}$/),
      });

      // Stored with the turn.error: the transcript has it, as an error message with the turn's ids.
      const res = await fetch(`${capped.url}/api/sessions/${encodeURIComponent(id)}/messages`);
      const { messages } = (await res.json()) as { messages: Message[] };
      const failed = messages.filter((m) => m.status === "error");
      expect(failed).toHaveLength(1);
      expect(`turn ${failed[0]!.turn_id}\ntrace ${failed[0]!.trace_id}`.replace(/\s+/g, " ")).toBe(live.diag!.replace(/\s+/g, " "));

      await reload(page);
      await expect.poll(() => cards.count()).toBe(1);
      expect(await errorCardView(cards.first())).toEqual(live);
      expect(await page.locator('[data-kind="user"]').allInnerTexts()).toEqual(["todo: plan"]);
      await page.close();
    } finally {
      await capped.close();
    }
  });

  it("Copy diagnostics puts the turn, trace and error on the clipboard", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(srv.url).origin });
    await newSession(page);
    await send(page, "fail: provider/unavailable");
    const card = page.locator('[data-kind="error"]');
    await card.waitFor();
    await expect.poll(() => card.locator(".diag").innerText()).toMatch(/turn turn_\S+\s+trace [0-9a-f]{32}/);
    const diag = await card.locator(".diag").innerText();
    const turnId = /turn (turn_\S+)/.exec(diag)![1];
    const traceId = /trace ([0-9a-f]{32})/.exec(diag)![1];

    await page.evaluate(() => navigator.clipboard.writeText("nothing yet"));
    await card.getByRole("button", { name: "Copy diagnostics" }).click();
    await card.getByRole("button", { name: "Copied" }).waitFor();
    const copied = JSON.parse(await page.evaluate(() => navigator.clipboard.readText())) as Record<string, unknown>;
    expect(copied).toEqual({
      turn_id: turnId,
      trace_id: traceId,
      layer: "provider",
      code: "unavailable",
      retryable: true,
      message: "demo provider: simulated failure provider/unavailable",
    });
    await page.close();
  });

  it("renames a session from the sidebar: the title changes everywhere, also in another tab and after a reload", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await newSession(page);
    const item = await firstTurn(page);
    const id = await sessionIdOf(page);
    const other = await browser.page();
    await openApp(other, `${srv.url}/#/s/${encodeURIComponent(id)}`);
    await other.getByLabel("Message").waitFor();
    expect(await other.locator(".topbar-title").innerText()).toBe("count to 3");
    // A background tab gets no animation frames (clicks wait for them): work in the first one.
    await page.bringToFront();

    await rowAction(item, "Rename");
    const input = item.getByLabel("Session title");
    expect(await input.inputValue()).toBe("count to 3");
    // Escape cancels: nothing is renamed.
    await input.fill("never saved");
    await input.press("Escape");
    expect(await item.locator(".session-title").innerText()).toBe("count to 3");
    await rowAction(item, "Rename");
    await item.getByLabel("Session title").fill("  Release planning  ");
    await item.getByRole("button", { name: "Save" }).click();

    await expect.poll(() => item.locator(".session-title").innerText()).toBe("Release planning");
    expect(await page.locator(".topbar-title").innerText()).toBe("Release planning");
    // The other tab hears it live (session.info), in its top bar and its sidebar.
    await expect.poll(() => other.locator(".topbar-title").innerText()).toBe("Release planning");
    await expect.poll(() => sidebarItem(other, id).locator(".session-title").innerText()).toBe("Release planning");
    await other.close();

    await reload(page);
    await expect.poll(() => page.locator(".topbar-title").innerText()).toBe("Release planning");
    expect(await sidebarItem(page, id).locator(".session-title").innerText()).toBe("Release planning");
    await page.close();
  });

  it("searches sessions by title and content, archives and deletes them (confirmed); renaming never moves a row", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await newSession(page);
    await firstTurn(page);
    const first = await sessionIdOf(page);
    const second = await startSession(page, "the zebra crossing");
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    const rows = () => page.locator(".session").evaluateAll((els) => els.map((e) => e.getAttribute("data-session-id")));
    // Grouped by day, in a stable order: renaming the older one (new activity) does not move it.
    expect(await page.locator(".session-group-head").first().innerText()).toMatch(/^today$/i);
    const before = await rows();
    expect(before.indexOf(second)).toBeLessThan(before.indexOf(first));
    await rowAction(sidebarItem(page, first), "Rename");
    await sidebarItem(page, first).getByLabel("Session title").fill("renamed later");
    await sidebarItem(page, first).getByRole("button", { name: "Save" }).click();
    await expect.poll(() => sidebarItem(page, first).locator(".session-title").innerText()).toBe("renamed later");
    expect(await rows()).toEqual(before);

    // Search: a word of a message (not of any title) finds its session only.
    const search = page.getByLabel("Search sessions");
    await search.fill("ZEBRA");
    await expect.poll(rows).toEqual([second]);
    await search.fill("renamed");
    await expect.poll(rows).toEqual([first]);
    await search.fill("no such thing anywhere");
    await page.getByText("No session matches").waitFor();
    await search.fill("");
    await expect.poll(async () => (await rows()).length).toBeGreaterThanOrEqual(2);
    await sidebarItem(page, first).getByRole("button", { name: "More actions for renamed later" }).click();
    await screenshot(page, "17-sessions-desktop");
    await page.keyboard.press("Escape");

    // Download: the transcript as a Markdown file (the export route, with the page's key).
    await sidebarItem(page, first).getByRole("button", { name: "More actions for renamed later" }).click();
    const [file] = await Promise.all([page.waitForEvent("download"), sidebarItem(page, first).getByRole("menuitem", { name: "Download" }).click()]);
    expect(file.suggestedFilename()).toBe("renamed-later.md");
    const { readFile } = await import("node:fs/promises");
    const md = await readFile((await file.path())!, "utf8");
    expect(md).toContain("renamed later");
    expect(md).toContain("count to 3");

    // Archive: out of the list, in the Archived one, and back.
    await rowAction(sidebarItem(page, first), "Archive");
    await expect.poll(async () => (await rows()).includes(first)).toBe(false);
    await page.getByRole("button", { name: "Archived" }).click();
    await expect.poll(rows).toEqual([first]);
    await rowAction(sidebarItem(page, first), "Unarchive");
    await expect.poll(rows).toEqual([]);
    await page.getByRole("button", { name: "Archived" }).click();
    await expect.poll(async () => (await rows()).includes(first)).toBe(true);

    // Delete asks first; Keep keeps it; Delete it removes the session and its transcript.
    const item = sidebarItem(page, second);
    await rowAction(item, "Delete…");
    await item.getByRole("button", { name: "Keep" }).click();
    expect(await item.count()).toBe(1);
    await rowAction(item, "Delete…");
    await item.getByText("Delete this session and its transcript for good?").waitFor();
    await item.getByRole("button", { name: "Delete it" }).click();
    await expect.poll(() => item.count()).toBe(0);
    // It was the open one: the page leaves it.
    await expect.poll(() => page.evaluate(() => location.hash)).not.toContain(second);
    expect((await fetch(`${srv.url}/api/sessions/${encodeURIComponent(second)}`)).status).toBe(404);
    await page.close();
  });

  it("closes a session (read-only, also after a reload) and reopens it to continue", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await newSession(page);
    const item = await firstTurn(page);

    // Close is in the row's own menu; it asks first: Keep changes nothing.
    await rowAction(item, "Close session…");
    await item.getByRole("button", { name: "Keep" }).click();
    expect(await item.getAttribute("data-state")).not.toBe("ended");
    await rowAction(item, "Close session…");
    await item.getByRole("button", { name: "Close it" }).click();

    const ended = page.locator(".ended-bar");
    await ended.waitFor();
    expect(await ended.innerText()).toContain("You closed this session.");
    expect(await page.getByLabel("Message").count()).toBe(0);
    // Said once: no notice in the transcript, no toast repeats the bar.
    expect(await page.locator(".notice").count()).toBe(0);
    expect(await page.locator(".toast").count()).toBe(0);
    await expect.poll(() => item.getAttribute("data-state")).toBe("ended");
    // No lifecycle words in the list: the row is its title.
    expect(await item.innerText()).toBe("count to 3");
    expect(await page.locator('[data-kind="user"]').allInnerTexts()).toEqual(["count to 3"]);

    // After a reload: the transcript read-only (from session.messages), with Reopen.
    await reload(page);
    await ended.waitFor();
    expect(await ended.innerText()).toContain("You closed this session.");
    expect(await page.locator('[data-kind="user"]').allInnerTexts()).toEqual(["count to 3"]);
    expect(await page.locator('[data-kind="assistant"] .md').allInnerTexts()).toEqual(["1 2 3"]);
    expect(await page.getByLabel("Message").count()).toBe(0);
    await expect.poll(() => item.getAttribute("data-state")).toBe("ended");

    // The ⋯ sits beside the row's title, never over it.
    const [title, more] = await Promise.all([item.locator(".session-title"), item.getByRole("button", { name: /^More actions for / })].map(async (l) => (await l.boundingBox())!));
    expect(title!.x + title!.width).toBeLessThanOrEqual(more!.x);
    await ended.getByRole("button", { name: "Reopen" }).click();
    await page.getByLabel("Message").waitFor();
    await page.locator(".toast", { hasText: "Session reopened" }).waitFor();
    expect(await ended.count()).toBe(0);
    await expect.poll(() => item.getAttribute("data-state")).toBe("live");
    await item.getByRole("button", { name: /^More actions for / }).click();
    // The menu is open (else "no Reopen" holds trivially, and the Escape would land before it opens).
    await item.getByRole("menuitem", { name: "Close session…", exact: true }).waitFor();
    expect(await item.getByRole("menuitem", { name: "Reopen" }).count()).toBe(0);
    // Esc closes it wherever the focus is: the reopened session's composer may take the focus while
    // the menu is open (seen in CI: the menu then stayed open).
    await page.getByLabel("Message").focus();
    await page.keyboard.press("Escape");
    await item.getByRole("menu").waitFor({ state: "detached", timeout: 5_000 });
    // It continues where it stopped.
    await send(page, "count to 2");
    await expect.poll(() => page.locator('[data-kind="assistant"] .md').allInnerTexts()).toEqual(["1 2 3", "1 2"]);
    expect(await page.locator('[data-kind="user"]').allInnerTexts()).toEqual(["count to 3", "count to 2"]);

    // Closed again, it reopens from the sidebar too.
    await rowAction(item, "Close session…");
    await item.getByRole("button", { name: "Close it" }).click();
    await ended.waitFor();
    await rowAction(item, "Reopen");
    await page.getByLabel("Message").waitFor();
    await expect.poll(() => item.getAttribute("data-state")).toBe("live");
    await page.close();
  });

  it("a session the gateway reaped stays in the list as idle, and opening it resumes it", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await newSession(page); // the page shows this one (its id is in the URL)
    // Another one, made over HTTP and watched by nobody; then reaped as the orphan grace would.
    const made = await (await fetch(`${srv.url}/api/sessions`, { method: "POST", body: JSON.stringify({ title: "reaped one" }) })).json();
    const id = made.session_id as string;
    const rt = [...sessionRooms(srv.server.manager).registry.values()].find((r) => r.id === id)!;
    await sessionRooms(srv.server.manager).ending.end(rt, "orphan_reap", { broadcast: true });
    await reload(page);
    const item = sidebarItem(page, id);
    await item.waitFor();
    expect(await item.getAttribute("data-state")).toBe("idle");
    // The gateway's lifecycle is not the user's business: the row is its title, nothing else.
    expect(await item.innerText()).toBe("reaped one");
    await item.locator(".session-title").click();
    await page.waitForFunction((sid) => decodeURIComponent(location.hash) === `#/s/${sid}`, id);
    await send(page, "count to 2");
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor();
    expect(await page.locator('[data-kind="assistant"]').last().innerText()).toContain("1 2");
    await expect.poll(async () => (await (await fetch(`${srv.url}/api/sessions/${id}`)).json()).state).toBe("live");
    await page.close();
  });

  it("a model switch during a turn is pending, then applies when the next turn starts", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await newSession(page);
    const badge = page.getByTestId("model-pending");
    expect(await shownModel(page)).toBe("demo");

    // Long enough (~4.5 s) that the model is picked while it streams, also on a busy machine.
    await send(page, "count to 300");
    await page.locator('[data-kind="assistant"][data-status="streaming"]').waitFor();
    await pickModel(page, "small");
    await badge.waitFor();
    expect(await badge.innerText()).toBe("pending");
    expect(await badge.getAttribute("title")).toBe("Now: demo");
    expect(await shownModel(page)).toBe("small");
    await page.locator(".toast", { hasText: "small will be used from the next turn" }).waitFor();

    // The running turn finishes on the old model; the switch still waits for the next turn.
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor({ timeout: 40_000 });
    expect(await page.locator('[data-kind="assistant"] .md').first().innerText()).toMatch(/^1 2 3 .* 300$/);
    expect(await badge.count()).toBe(1);
    expect(await page.getByText("Model switched to small").count()).toBe(0);

    ai.script(reply.text(["Hello ", "from small"]));
    await send(page, "who are you?");
    await page.getByText("Model switched to small").waitFor();
    await expect.poll(() => badge.count()).toBe(0);
    expect(await shownModel(page)).toBe("small");
    await expect.poll(() => page.locator('[data-kind="assistant"][data-status="complete"] .md').allInnerTexts()).toHaveLength(2);
    expect((await page.locator('[data-kind="assistant"] .md').allInnerTexts())[1]).toBe("Hello from small");
    expect(ai.requests.at(-1)!.body.model).toBe("small");
    await page.close();
  });

  it("switching back to the current model while a switch is pending cancels it", async () => {
    const page = await browser.page();
    await openApp(page, srv.url);
    await newSession(page);
    const badge = page.getByTestId("model-pending");
    // Long enough (~4.5 s) that the model is picked while it streams, also on a busy machine.
    await send(page, "count to 300");
    await page.locator('[data-kind="assistant"][data-status="streaming"]').waitFor();
    // Escape at once after opening the menu closes the menu; it never stops the streaming reply.
    await page.getByTestId("model-button").click();
    await page.keyboard.press("Escape");
    await expect.poll(() => page.getByRole("listbox", { name: "Models" }).count()).toBe(0);
    expect(await page.locator('[data-kind="assistant"][data-status="streaming"]').count()).toBe(1);
    await pickModel(page, "small");
    await badge.waitFor();
    await pickModel(page, "demo");
    await expect.poll(() => badge.count()).toBe(0);
    expect(await shownModel(page)).toBe("demo");
    await page.locator('[data-kind="assistant"][data-status="complete"]').waitFor({ timeout: 40_000 });
    await send(page, "count to 2");
    await expect.poll(() => page.locator('[data-kind="assistant"][data-status="complete"]').count()).toBe(2);
    expect((await page.locator('[data-kind="assistant"] .md').allInnerTexts())[1]).toBe("1 2");
    expect(await page.getByText("Model switched to").count()).toBe(0);
    expect(await shownModel(page)).toBe("demo");
    await page.close();
  });
});
