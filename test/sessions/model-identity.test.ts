/** Stale provider config never survives a resume: merge, heal, fall back, follow the profile. */
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/lib/clock.js";
import { mergeModelConfig } from "../../src/sessions/models/model-identity.js";
import type { ConfigInput } from "../../src/config/index.js";
import { tempDbPath } from "../support/temp-db.js";
import { ME, settle, startHarness, TestViewer, type Harness } from "../support/manager-harness.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    sessionRooms(h.manager).lifecycle.stop();
    await h.store.close().catch(() => undefined);
  }
});

async function proc(db: string, id: string, config: ConfigInput, profile?: Record<string, unknown>) {
  const h = await startHarness({
    dbPath: db,
    clock: new FakeClock(),
    processId: id,
    lifecycle: { startup_sweep: false },
    config,
    ...(profile ? { profile } : {}),
  });
  harnesses.push(h);
  return h;
}

const LOCAL = { base_url: "http://127.0.0.1:9/v1", models: ["llama"] };

async function modelEvents(h: Harness, sid: string) {
  return (await h.store.readEvents(sid, 0, 1000)).filter((e) => e.type === "model.switched").map((e) => JSON.parse(e.payload));
}

describe("model identity", () => {
  it("merging deletes keys whose current value is empty and never keeps secrets", () => {
    const stored = { provider: "old", model: "m1", base_url: "http://old/v1", kind: "openai", api_key: "sk-1" };
    expect(mergeModelConfig(stored, { provider: "demo", model: "demo", base_url: "", kind: "demo" })).toEqual({
      provider: "demo",
      model: "demo",
      kind: "demo",
    });
    expect(mergeModelConfig({}, { model: "x", token: "t" })).toEqual({ model: "x" });
  });

  it("a resume after the provider was renamed heals by base URL and tells the client", async () => {
    const db = tempDbPath();
    const a = await proc(db, "A", { providers: { local: LOCAL } });
    const snap = await a.manager.create(ME, {}, new TestViewer("v"));
    expect(snap).toMatchObject({ provider: "local", model: "llama" });
    await a.manager.shutdown();

    const b = await proc(db, "B", { providers: { ollama: LOCAL } });
    const back = await b.manager.resume(ME, snap.session_id, new TestViewer("v2"));
    expect(back).toMatchObject({ provider: "ollama", model: "llama" });
    expect(await modelEvents(b, snap.session_id)).toEqual([
      { from: { provider: "local", model: "llama" }, to: { provider: "ollama", model: "llama" }, reason: "provider_unavailable" },
    ]);
    const row = await b.store.getSession(snap.session_id);
    expect(row).toMatchObject({ provider: "ollama", model: "llama" });
    expect(row!.model_config).toMatchObject({ provider: "ollama", base_url: LOCAL.base_url });
  });

  it("falls back to the default when no configured provider matches, deleting the stale base URL", async () => {
    const db = tempDbPath();
    const a = await proc(db, "A", { providers: { local: LOCAL } });
    const snap = await a.manager.create(ME, {}, new TestViewer("v"));
    await a.manager.shutdown();

    const b = await proc(db, "B", {});
    const back = await b.manager.resume(ME, snap.session_id, new TestViewer("v2"));
    expect(back).toMatchObject({ provider: "demo", model: "demo" });
    expect((await modelEvents(b, snap.session_id))[0]).toMatchObject({ reason: "provider_unavailable", to: { provider: "demo" } });
    const row = await b.store.getSession(snap.session_id);
    expect(row!.model_config).toEqual({ provider: "demo", model: "demo", kind: "demo" });
    // Resuming again changes nothing: the healed choice is now the stored one.
    await b.manager.shutdown();
    const c = await proc(db, "C", {});
    await c.manager.resume(ME, snap.session_id, new TestViewer("v3"));
    expect(await modelEvents(c, snap.session_id)).toHaveLength(1);
  });

  it("follow_profile_config sessions rebuild from the profile's current config; others keep theirs", async () => {
    const db = tempDbPath();
    const a = await proc(db, "A", { providers: { local: LOCAL }, default_provider: "demo" });
    const bot = await a.manager.create(ME, { follow_profile_config: true }, new TestViewer("v1"));
    const chat = await a.manager.create(ME, {}, new TestViewer("v2"));
    expect(bot.provider).toBe("demo");
    await a.manager.shutdown();

    // The profile now defaults to the local provider.
    const b = await proc(db, "B", { providers: { local: LOCAL }, default_provider: "local" });
    expect(await b.manager.resume(ME, bot.session_id, new TestViewer("v3"))).toMatchObject({ provider: "local", model: "llama" });
    expect((await modelEvents(b, bot.session_id))[0]).toMatchObject({ reason: "profile_config" });
    expect(await b.manager.resume(ME, chat.session_id, new TestViewer("v4"))).toMatchObject({ provider: "demo", model: "demo" });
    expect(await modelEvents(b, chat.session_id)).toEqual([]);
  });

  it("room_plumbing sessions rebuild from the profile's current config like follow_profile_config; others keep theirs", async () => {
    const db = tempDbPath();
    const a = await proc(db, "A", { providers: { local: LOCAL }, default_provider: "demo" });
    const room = await a.manager.create(ME, { room_plumbing: true, hidden: true }, new TestViewer("v1"));
    const chat = await a.manager.create(ME, { hidden: true }, new TestViewer("v2"));
    expect(room.provider).toBe("demo");
    await a.manager.shutdown();

    const b = await proc(db, "B", { providers: { local: LOCAL }, default_provider: "local" });
    expect(await b.manager.resume(ME, room.session_id, new TestViewer("v3"))).toMatchObject({ provider: "local", model: "llama" });
    expect(await modelEvents(b, room.session_id)).toEqual([
      { from: { provider: "demo", model: "demo" }, to: { provider: "local", model: "llama" }, reason: "profile_config" },
    ]);
    expect(await b.manager.resume(ME, chat.session_id, new TestViewer("v4"))).toMatchObject({ provider: "demo", model: "demo" });
    expect(await modelEvents(b, chat.session_id)).toEqual([]);
  });

  it("a provider that is gone: another provider serving the session's model first, then the base URL, then the default", async () => {
    const db = tempDbPath();
    const a = await proc(db, "A", {
      providers: { old: { base_url: "http://127.0.0.1:9/v1", models: ["llama", "qwen"] }, other: { base_url: "http://127.0.0.1:10/v1", models: ["mistral"] } },
    });
    const picked = await a.manager.create(ME, { provider: "old", model: "qwen" }, new TestViewer("v1"));
    const byUrl = await a.manager.create(ME, { provider: "old", model: "llama" }, new TestViewer("v2"));
    const lost = await a.manager.create(ME, { provider: "other", model: "mistral" }, new TestViewer("v3"));
    await a.manager.shutdown();

    // `old` and `other` are gone; `mirror` serves qwen elsewhere, `renamed` took old's base URL.
    const b = await proc(db, "B", {
      providers: {
        renamed: { base_url: "http://127.0.0.1:9/v1", models: ["llama"] },
        mirror: { base_url: "http://127.0.0.1:11/v1", models: ["qwen"] },
      },
      default_provider: "renamed",
    });
    // 1. The model this session picked, on another provider that serves it (not its base URL's).
    expect(await b.manager.resume(ME, picked.session_id, new TestViewer("w1"))).toMatchObject({ provider: "mirror", model: "qwen" });
    // 2. Nobody lists llama but the provider now at its base URL does.
    expect(await b.manager.resume(ME, byUrl.session_id, new TestViewer("w2"))).toMatchObject({ provider: "renamed", model: "llama" });
    // 3. Neither: the profile default.
    expect(await b.manager.resume(ME, lost.session_id, new TestViewer("w3"))).toMatchObject({ provider: "renamed", model: "llama" });
    for (const s of [picked, byUrl, lost]) expect((await modelEvents(b, s.session_id))[0]).toMatchObject({ reason: "provider_unavailable" });
  });

  it("renders {cwd}, {date} and {profile} in the system prompt from the session's own values", async () => {
    const db = tempDbPath();
    const clock = new FakeClock(Date.UTC(2026, 10, 29, 12));
    const h = await startHarness({ dbPath: db, clock, processId: "A", lifecycle: { startup_sweep: false } });
    harnesses.push(h);
    const snap = await h.manager.create(
      ME,
      { profile: "work", cwd: "/srv/app", system_prompt: "cwd={cwd} date={date} profile={profile}" },
      new TestViewer("v"),
    );
    const rt = [...sessionRooms(h.manager).registry.values()].find((r) => r.id === snap.session_id)!;
    expect(rt.systemPrompt).toBe(
      "cwd=/srv/app date=2026-11-29 profile=work",
    );
    await settle();
  });
});
