/**
 * Managing sessions over the Sessions API and the WebSocket: search (`query`, titles and message
 * contents), archive (`archived`, out of the default list, kept whole) and delete (the session and
 * its transcript, for good; `DELETE /api/sessions/{id}?purge=true`, `session.delete`) — each scoped
 * to its principal: another's session answers exactly like a missing one.
 */
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

const KEYS = { "alice-key": "alice", "bob-key": "bob" };
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ config: { auth: { keys: KEYS } } });
});
afterAll(async () => {
  await server?.close();
});

async function req(path: string, key: string, init: RequestInit = {}) {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${key}`);
  if (init.body) headers.set("content-type", "application/json");
  const res = await fetch(`${server.url}${path}`, { ...init, headers });
  return { status: res.status, body: (await res.json()) as any };
}

/** A session of alice's with a finished turn on `prompt`. */
async function sessionWith(title: string, prompt: string): Promise<string> {
  const made = await req("/api/sessions", "alice-key", { method: "POST", body: JSON.stringify({ title }) });
  const id = made.body.session_id as string;
  expect((await req(`/api/sessions/${id}/prompt`, "alice-key", { method: "POST", body: JSON.stringify({ text: prompt }) })).status).toBe(202);
  await expect.poll(async () => (await req(`/api/sessions/${id}/messages`, "alice-key")).body.messages.length).toBe(2);
  return id;
}

const listed = async (qs: string, key = "alice-key") => ((await req(`/api/sessions?${qs}`, key)).body.sessions as Array<{ session_id: string }>).map((s) => s.session_id);

describe("sessions: search, archive, delete", () => {
  it("searches titles and message contents; archives out of the default list; another principal sees none of it", async () => {
    const plans = await sessionWith("Release planning", "count to 2");
    const chat = await sessionWith("chat", "what about the Quarterly numbers?");
    expect(await listed("query=planning")).toEqual([plans]);
    expect(await listed("query=quarterly")).toEqual([chat]); // in a message (the prompt and its echo), any case
    expect(await listed("query=nothing%20matches")).toEqual([]);
    expect(await listed("query=planning", "bob-key")).toEqual([]);
    expect((await req("/api/sessions?query=", "alice-key")).status).toBe(200); // empty = no filter (as other params)
    expect((await req(`/api/sessions?query=${"x".repeat(201)}`, "alice-key")).status).toBe(400);

    const archived = await req(`/api/sessions/${plans}`, "alice-key", { method: "PATCH", body: JSON.stringify({ archived: true }) });
    expect(archived.body).toMatchObject({ session_id: plans, archived: true });
    expect(await listed("query=planning")).toEqual([]);
    expect(await listed("archived=true")).toEqual([plans]);
    expect(await listed("")).toContain(chat);
    expect(await listed("")).not.toContain(plans);
    // Bob cannot archive it: the same 404 as a missing session.
    const theirs = await req(`/api/sessions/${chat}`, "bob-key", { method: "PATCH", body: JSON.stringify({ archived: true }) });
    const missing = await req(`/api/sessions/ses_nope`, "bob-key", { method: "PATCH", body: JSON.stringify({ archived: true }) });
    expect(theirs.status).toBe(404);
    expect(theirs.body.error.code).toBe(missing.body.error.code);
    // Unarchived, it is back in the list, and still whole.
    await req(`/api/sessions/${plans}`, "alice-key", { method: "PATCH", body: JSON.stringify({ archived: false }) });
    expect(await listed("query=planning")).toEqual([plans]);
    expect((await req(`/api/sessions/${plans}/messages`, "alice-key")).body.messages).toHaveLength(2);
  });

  it("deletes a session and its transcript for good (HTTP ?purge=true and session.delete); another principal's answers like a missing one", async () => {
    const open = await sessionWith("to delete", "count to 3");
    const closed = await sessionWith("closed one", "count to 1");
    await req(`/api/sessions/${closed}`, "alice-key", { method: "DELETE" });
    expect((await req(`/api/sessions/${closed}`, "alice-key")).body.state).toBe("ended");

    const bobs = await req(`/api/sessions/${open}?purge=true`, "bob-key", { method: "DELETE" });
    const nobody = await req(`/api/sessions/ses_nope?purge=true`, "bob-key", { method: "DELETE" });
    expect(bobs.status).toBe(404);
    expect(bobs.body).toEqual({ ...nobody.body, error: { ...nobody.body.error, message: expect.any(String) } });
    expect((await req(`/api/sessions/${open}`, "alice-key")).status).toBe(200);
    expect((await req(`/api/sessions/${open}?purge=maybe`, "alice-key", { method: "DELETE" })).status).toBe(400);

    expect((await req(`/api/sessions/${open}?purge=true`, "alice-key", { method: "DELETE" })).body).toEqual({ deleted: true });
    expect((await req(`/api/sessions/${open}`, "alice-key")).status).toBe(404);
    expect((await req(`/api/sessions/${open}/messages`, "alice-key")).status).toBe(404);
    expect(await listed("include_ended=true")).not.toContain(open);
    // Nothing of it is left in the store: no row, no event, no message.
    const db = new Database(server.dbPath, { readonly: true });
    const rows = (id: string) =>
      ["sessions WHERE id", "events WHERE session_id", "messages WHERE session_id"].map(
        (t) => (db.prepare(`SELECT COUNT(*) AS n FROM ${t} = ?`).get(id) as { n: number }).n,
      );
    expect(rows(open)).toEqual([0, 0, 0]);

    // Over the WebSocket: session.delete, on a session closed before.
    const ws = await RpcSocket.open(`${server.wsUrl}?token=alice-key`);
    try {
      const bob = await RpcSocket.open(`${server.wsUrl}?token=bob-key`);
      const err = await bob.call("session.delete", { session_id: closed }).catch((e: unknown) => e);
      expect((err as { code?: number }).code).toBe(4007);
      bob.close();
      expect(await ws.call("session.delete", { session_id: closed })).toEqual({ deleted: true });
      expect(rows(closed)).toEqual([0, 0, 0]);
      const again = await ws.call("session.delete", { session_id: closed }).catch((e: unknown) => e);
      expect((again as { code?: number }).code).toBe(4007);
    } finally {
      ws.close();
      db.close();
    }
  });
});
