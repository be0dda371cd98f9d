/** Profiles over WebSocket: each has its own store; a broken one never falls back to another's. */
import { mkdtempSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { startTestServer, tempDbPath, type TestServer } from "../support/start-server.js";
import { spawnGateway } from "../support/spawn-gateway.js";
import { RpcSocket } from "../support/rpc-socket.js";

const dir = mkdtempSync(join(tmpdir(), "tether-profiles-"));
const workDb = join(dir, "work", "tether.db");
const notADir = join(dir, "plain-file");
writeFileSync(notADir, "a file where a folder should be");
const brokenDb = join(notADir, "broken", "tether.db");
let srv: TestServer;

beforeAll(async () => {
  srv = await startTestServer({
    config: {
      profiles: { work: { db: workDb, system_prompt: "You are at work ({profile})." }, broken: { db: brokenDb } },
    },
  });
});
afterAll(async () => {
  await srv.close();
});

async function countSessions(path: string): Promise<number> {
  const store = new SqliteStore({ path });
  try {
    const page = await store.listSessions({ principal: "default", limit: 500, includeEnded: true, includeHidden: true });
    return page.items.length;
  } finally {
    await store.close();
  }
}

describe("profiles", () => {
  it("keeps each profile's sessions in its own store, addressed by the profile param", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const work = await sock.call("session.create", { profile: "work", title: "w" });
    expect(work.profile).toBe("work");
    const home = await sock.call("session.create", { title: "h" });
    expect(home.profile).toBe("default");

    const t = await sock.call("prompt.submit", { session_id: work.session_id, profile: "work", text: "hello" });
    await sock.waitForEvent(work.session_id, (f) => f.type === "turn.complete" && f.turn_id === t.turn_id);

    const workList = await sock.call("session.list", { profile: "work" });
    expect(workList.sessions.map((s: any) => s.session_id)).toEqual([work.session_id]);
    const defaultList = await sock.call("session.list", {});
    expect(defaultList.sessions.map((s: any) => s.session_id)).not.toContain(work.session_id);
    // The wrong profile does not know the session.
    const wrong = await sock.request("prompt.submit", { session_id: work.session_id, text: "hi" });
    expect(wrong.error).toMatchObject({ code: 4007 });
    expect(await countSessions(workDb)).toBe(1);
    sock.close();
  });

  it("fails a call on a profile whose store cannot be opened with 5070, touching no other store", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const before = await countSessions(srv.dbPath);
    const workBefore = await countSessions(workDb);
    const answer = await sock.request("session.create", { profile: "broken", title: "nope" });
    expect(answer.error).toMatchObject({ code: 5070, message: "profile store unavailable: broken", data: { profile: "broken" } });
    expect(await countSessions(srv.dbPath)).toBe(before);
    expect(await countSessions(workDb)).toBe(workBefore);
    expect(existsSync(brokenDb)).toBe(false);
    const unknown = await sock.request("session.list", { profile: "nobody" });
    expect(unknown.error).toMatchObject({ code: -32602, data: { issues: [{ path: "profile" }] } });
    sock.close();
  });

  it("closing sessions never closes the default profile's shared store", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    for (let i = 0; i < 3; i++) {
      const s = await sock.call("session.create", {});
      await sock.call("session.close", { session_id: s.session_id });
    }
    const again = await sock.call("session.create", {});
    expect(again.state).toBe("live");
    expect((await fetch(`${srv.url}/readyz`)).status).toBe(200);
    sock.close();
  });

  it("the sessions API addresses a profile by X-Tether-Profile or ?profile=", async () => {
    const workBefore = await countSessions(workDb);
    const created = await fetch(`${srv.url}/api/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-tether-profile": "work" },
      body: JSON.stringify({ title: "via http" }),
    });
    expect(created.status).toBe(201);
    const snap = (await created.json()) as { session_id: string; profile: string };
    expect(snap.profile).toBe("work");
    expect(await countSessions(workDb)).toBe(workBefore + 1);
    const listed = (await (await fetch(`${srv.url}/api/sessions?profile=work`)).json()) as { sessions: Array<{ session_id: string }> };
    expect(listed.sessions.map((s) => s.session_id)).toContain(snap.session_id);
    expect((await fetch(`${srv.url}/api/sessions/${snap.session_id}`)).status).toBe(404); // not in the default store
    expect((await fetch(`${srv.url}/api/sessions/${snap.session_id}?profile=work`)).status).toBe(200);
    const broken = await fetch(`${srv.url}/api/sessions`, { headers: { "x-tether-profile": "broken" } });
    expect(broken.status).toBe(503);
    expect(((await broken.json()) as { error: { code: string } }).error.code).toBe("storage_unavailable");
  });

  it.skipIf(process.platform !== "linux")(
    "a profile whose db folder cannot be made (under /proc/self) answers 5070 at once and freezes nothing",
    async () => {
      // Node's recursive mkdir loops forever on this path: it froze the whole gateway, /healthz too.
      const config = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
      writeFileSync(config, "profiles:\n  stuck:\n    db: /proc/self/tether-nope/tether.db\n");
      const g = await spawnGateway(["--port", "0", "--db", tempDbPath()], { TETHER_CONFIG: config });
      const bounded = <T>(p: Promise<T>) =>
        Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error("no answer within 5 s")), 5_000))]);
      try {
        const sock = await RpcSocket.open(g.wsUrl);
        const answer = sock.request("session.create", { profile: "stuck" });
        // While that profile fails, the gateway answers everything else.
        expect((await bounded(fetch(`${g.url}/healthz`))).status).toBe(200);
        expect((await bounded(answer)).error).toMatchObject({ code: 5070, data: { profile: "stuck" } });
        expect((await bounded(sock.call("session.create", {}))).profile).toBe("default");
        expect((await bounded(sock.request("session.list", { profile: "stuck" }))).error).toMatchObject({ code: 5070 });
        sock.close();
      } finally {
        await g.kill("SIGKILL");
      }
    },
    30_000,
  );
});
