/**
 * Branching end to end over a real WebSocket: edit and regenerate any prompt (not only the newest),
 * the old branch kept as a previous version, the model sees the active branch only, switching
 * versions is a durable event replayed by session.events.since, and a reopened gateway (same
 * database) shows the same versions. Plus the refusals, by code, and the stop reasons.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, tempDbPath, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { reply, startFakeOpenAI } from "../support/fake-openai-server.js";

let srv: TestServer;
const dbPath = tempDbPath();

beforeAll(async () => {
  // A small head and tail, so a short session has something to compress.
  srv = await startTestServer({ demoDelayMs: 1, dbPath, config: { compression: { protect_first_n: 1, protect_last_n: 4 } } });
});
afterAll(async () => {
  await srv.close();
});

async function turn(sock: RpcSocket, sessionId: string, params: Record<string, unknown>): Promise<{ turn_id: string; status: string }> {
  const sub = await sock.call("prompt.submit", { session_id: sessionId, ...params });
  await sock.waitForEvent(sessionId, (f) => f.type === "turn.complete" && f.payload.turn_id === sub.turn_id);
  return sub;
}

async function transcript(sock: RpcSocket, sessionId: string): Promise<any[]> {
  return (await sock.call("session.messages", { session_id: sessionId })).messages;
}

const shape = (ms: any[]) => ms.map((m) => `${m.role}:${m.content}`);

describe("branching over WebSocket", () => {
  it("edits an earlier prompt: the old branch is a previous version, the model sees the new branch only, and switching back is durable", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id: sid } = await sock.call("session.create", {});
    await turn(sock, sid, { text: "alpha" });
    await turn(sock, sid, { text: "beta" });
    await turn(sock, sid, { text: "recall" });
    const before = await transcript(sock, sid);
    expect(before.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["alpha", "beta", "recall"]);
    const beta = before.find((m) => m.content === "beta")!;

    // Edit the second prompt (not the newest): everything from it on becomes version 1.
    const edit = await turn(sock, sid, { from_message_id: beta.message_id, text: "gamma" });
    expect(edit.status).toBe("started");
    const created = sock.sessionEvents(sid).find((f) => f.type === "branch.created")!;
    expect(created.turn_id).toBe(edit.turn_id);
    expect(created.payload.replaced_message_id).toBe(beta.message_id);
    expect(created.payload.root_message_id).toBe(beta.message_id);
    expect(created.payload.hidden_message_ids).toEqual(before.slice(2).map((m) => m.message_id));
    const after = await transcript(sock, sid);
    expect(shape(after).slice(0, 3)).toEqual(shape(before).slice(0, 2).concat("user:gamma"));
    expect(after).toHaveLength(4);
    const gamma = after[2]!;
    expect(gamma.versions).toEqual([beta.message_id, gamma.message_id]);
    expect(created.payload.message_id).toBe(gamma.message_id);

    // The model sees the active branch only: "beta" and the old "recall" are gone from its history.
    await turn(sock, sid, { text: "recall" });
    const recalled = (await transcript(sock, sid)).at(-1)!;
    expect(recalled.content).toBe('Earlier you said: "alpha", "gamma".');

    // Switch back to version 1: a durable branch.switched with seq, carrying the restored branch.
    const sel = await sock.call("session.branch.select", { session_id: sid, message_id: beta.message_id });
    expect(sel).toMatchObject({ status: "switched", message_id: beta.message_id, versions: [beta.message_id, gamma.message_id] });
    const switched = sock.sessionEvents(sid).find((f) => f.type === "branch.switched")!;
    expect(switched.seq).toBe(sel.seq);
    expect(switched.payload.previous_message_id).toBe(gamma.message_id);
    expect(switched.payload.messages.map((m: any) => m.message_id)).toEqual(before.slice(2).map((m) => m.message_id));
    expect(switched.payload.messages[0].versions).toEqual([beta.message_id, gamma.message_id]);
    expect(shape(await transcript(sock, sid))).toEqual(shape(before));
    await turn(sock, sid, { text: "recall" });
    expect((await transcript(sock, sid)).at(-1)!.content).toBe('Earlier you said: "alpha", "beta", "recall".');

    // Selecting the version shown changes nothing (no event).
    const same = await sock.call("session.branch.select", { session_id: sid, message_id: beta.message_id });
    expect(same.status).toBe("unchanged");

    // Replayed: a client catching up from before the switch gets the same frames, in seq order.
    const since = await sock.call("session.events.since", { session_id: sid, after_seq: 0, include_transient: false });
    const types = since.events.map((f: any) => f.type);
    expect(types.filter((t: string) => t.startsWith("branch."))).toEqual(["branch.created", "branch.switched"]);
    expect(since.events.find((f: any) => f.type === "branch.switched").seq).toBe(sel.seq);
    sock.close();
  });

  it("regenerates with the same prompt (no text): a new version whose versions every reader sees, also after a restart", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id: sid } = await sock.call("session.create", {});
    await turn(sock, sid, { text: "fail: provider/rate_limited" });
    const first = await transcript(sock, sid);
    const prompt = first[0]!;
    const regen = await turn(sock, sid, { from_message_id: prompt.message_id });
    const frames = sock.sessionEvents(sid).filter((f) => f.turn_id === regen.turn_id);
    expect(frames.find((f) => f.type === "turn.start")!.payload.input).toBe("fail: provider/rate_limited");
    const now = await transcript(sock, sid);
    expect(now.filter((m) => m.role === "user")).toHaveLength(1);
    expect(now[0]!.content).toBe(prompt.content);
    expect(now[0]!.versions).toEqual([prompt.message_id, now[0]!.message_id]);
    // A retried regenerate with the same request id is one turn.
    const again1 = await sock.call("prompt.submit", { session_id: sid, from_message_id: now[0]!.message_id, request_id: "regen-1" });
    await sock.waitForEvent(sid, (f) => f.type === "turn.complete" && f.payload.turn_id === again1.turn_id);
    const again2 = await sock.call("prompt.submit", { session_id: sid, from_message_id: now[0]!.message_id, request_id: "regen-1" });
    expect(again2).toMatchObject({ status: "duplicate", turn_id: again1.turn_id });
    sock.close();

    // Another gateway process on the same database (another browser after a reload) shows the same versions.
    const other = await startTestServer({ demoDelayMs: 1, dbPath });
    try {
      const s2 = await RpcSocket.open(other.wsUrl);
      const snap = await s2.call("session.resume", { session_id: sid });
      const users = snap.messages.filter((m: any) => m.role === "user");
      expect(users).toHaveLength(1);
      expect(users[0].versions).toHaveLength(3);
      expect(users[0].versions.at(-1)).toBe(users[0].message_id);
      s2.close();
    } finally {
      await other.close();
    }
  });

  it("refuses by code: unknown message, not a prompt, off the branch, busy, no text and no branch point", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id: sid } = await sock.call("session.create", {});
    await turn(sock, sid, { text: "one" });
    const [user, reply] = await transcript(sock, sid);
    const unknown = await sock.request("prompt.submit", { session_id: sid, from_message_id: "msg_nope" });
    expect(unknown.error).toMatchObject({ code: 4070, data: { message_id: "msg_nope" } });
    const assistant = await sock.request("prompt.submit", { session_id: sid, from_message_id: reply.message_id });
    expect(assistant.error).toMatchObject({ code: 4071, data: { role: "assistant" } });
    const noText = await sock.request("prompt.submit", { session_id: sid });
    expect(noText.error?.code).toBe(-32602);
    expect(noText.error?.data.issues[0].path).toBe("text");
    const single = await sock.request("session.branch.select", { session_id: sid, message_id: user.message_id });
    expect(single.error?.code).toBe(4071);

    // While a turn runs: 4073, nothing changes.
    const running = await sock.call("prompt.submit", { session_id: sid, text: "count to 400" });
    const busy = await sock.request("prompt.submit", { session_id: sid, from_message_id: user.message_id, text: "two" });
    expect(busy.error?.code).toBe(4073);
    const busySelect = await sock.request("session.branch.select", { session_id: sid, message_id: user.message_id });
    expect(busySelect.error?.code).toBe(4073);
    await sock.call("session.interrupt", { session_id: sid });
    await sock.waitForEvent(sid, (f) => f.type === "turn.complete" && f.payload.turn_id === running.turn_id);

    // The interrupt's reason is the server's, on the frames and in the stored message.
    const done = sock.sessionEvents(sid).find((f) => f.type === "turn.complete" && f.payload.turn_id === running.turn_id)!;
    expect(done.payload).toMatchObject({ status: "interrupted", stop_reason: "user" });
    const stopped = (await transcript(sock, sid)).at(-1)!;
    expect(stopped).toMatchObject({ role: "assistant", status: "interrupted", stop_reason: "user" });
    expect(stopped.display_metadata).toBeUndefined();

    // A prompt on a version no longer shown cannot be branched from until that version is selected.
    await turn(sock, sid, { from_message_id: user.message_id, text: "two" });
    const hidden = await sock.request("prompt.submit", { session_id: sid, from_message_id: user.message_id, text: "three" });
    expect(hidden.error).toMatchObject({ code: 4071, data: { hidden_by: user.message_id } });

    // Another principal's id answers like a missing session.
    const missing = await sock.request("session.branch.select", { session_id: "ses_nope", message_id: user.message_id });
    expect(missing.error?.code).toBe(4007);
    sock.close();
  });

  it("refuses a branch point before a compression point (4072), and edits after it", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id: sid } = await sock.call("session.create", {});
    for (const t of ["a1", "a2", "a3", "a4", "a5"]) await turn(sock, sid, { text: t });
    const parentMessages = await transcript(sock, sid);
    const sub = await sock.call("prompt.submit", { session_id: sid, text: "/compress" });
    await sock.waitForEvent(sid, (f) => f.type === "session.rotated");
    const tip = sock.sessionEvents(sid).find((f) => f.type === "session.rotated")!.payload.to;
    await sock.waitForEvent(sid, (f) => f.type === "turn.complete" && f.payload.turn_id === sub.turn_id);
    const child = await transcript(sock, tip);
    const summary = child.find((m) => m.display_kind === "compression_summary")!;
    const head = child[0]!;
    expect(head.content).toBe("a1");
    // In the parent (summarized), copied into the head, or the summary itself: refused by name.
    const inParent = await sock.request("prompt.submit", { session_id: tip, from_message_id: parentMessages[2]!.message_id, text: "x" });
    expect(inParent.error).toMatchObject({ code: 4072, data: { session_id: sid } });
    const inHead = await sock.request("prompt.submit", { session_id: tip, from_message_id: head.message_id, text: "x" });
    expect(inHead.error?.code).toBe(4072);
    const onSummary = await sock.request("prompt.submit", { session_id: tip, from_message_id: summary.message_id, text: "x" });
    expect(onSummary.error?.code).toBe(4071);
    // After the summary: a branch as anywhere else.
    const tail = child.slice(child.indexOf(summary) + 1).filter((m) => m.role === "user").at(-1)!;
    const edit = await sock.call("prompt.submit", { session_id: tip, from_message_id: tail.message_id, text: "edited" });
    await sock.waitFor(() => sock.events.some((f) => f.session_id === tip && f.type === "turn.complete" && f.payload.turn_id === edit.turn_id));
    expect((await transcript(sock, tip)).some((m) => m.content === "edited")).toBe(true);
    sock.close();
  });

  it("edits the session's system prompt where allowed (session.info says so), and refuses it by name where the profile owns it", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id: sid } = await sock.call("session.create", { system_prompt: "old" });
    await sock.call("session.update", { session_id: sid, system_prompt: "Be brief." });
    const info = sock.sessionEvents(sid).filter((f) => f.type === "session.info").at(-1)!;
    expect(info.payload.system_prompt).toBe("Be brief.");
    const snap = await sock.call("session.resume", { session_id: sid });
    expect(snap.system_prompt).toBe("Be brief.");
    expect(snap.system_prompt_fixed).toBeUndefined();
    await sock.call("session.update", { session_id: sid, system_prompt: "" });
    expect((await sock.call("session.resume", { session_id: sid })).system_prompt).toBeUndefined();
    const { session_id: plumbed } = await sock.call("session.create", { follow_profile_config: true });
    const refused = await sock.request("session.update", { session_id: plumbed, system_prompt: "x" });
    expect(refused.error).toMatchObject({ code: 4074, data: { field: "system_prompt" } });
    expect((await sock.call("session.resume", { session_id: plumbed })).system_prompt_fixed).toBe(true);
    sock.close();
  });
});

describe("the export keeps every version", () => {
  it("jsonl: the active branch (versions on its prompt), then every message off it with hidden_by; markdown says they are there", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id: sid } = await sock.call("session.create", {});
    await turn(sock, sid, { text: "one" });
    await turn(sock, sid, { text: "two" });
    const [one] = await transcript(sock, sid);
    await turn(sock, sid, { from_message_id: one!.message_id, text: "uno" });
    const lines = (await (await fetch(`${srv.url}/api/sessions/${sid}/export`)).text()).trim().split("\n").map((l) => JSON.parse(l));
    const active = lines.filter((l) => l.type === "message");
    const hidden = lines.filter((l) => l.type === "hidden_message");
    expect(active.map((m) => m.content.split(" ")[0])).toEqual(["uno", "You"]);
    expect(active[0].versions).toEqual([one!.message_id, active[0].message_id]);
    expect(hidden.map((m) => [m.role, m.hidden_by])).toEqual([
      ["user", one!.message_id],
      ["assistant", one!.message_id],
      ["user", one!.message_id],
      ["assistant", one!.message_id],
    ]);
    expect(hidden[0].content).toBe("one");
    const md = await (await fetch(`${srv.url}/api/sessions/${sid}/export?format=markdown`)).text();
    expect(md).toContain("4 message(s) of earlier versions");
    expect(md).not.toContain("two");
    sock.close();
  });
});

describe("branching over the sessions API", () => {
  it("prompt with from_message_id, branch to switch, PATCH system_prompt; errors by name", async () => {
    const post = (path: string, body: unknown) =>
      fetch(`${srv.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const created = (await (await post("/api/sessions", {})).json()) as { session_id: string };
    const sid = created.session_id;
    // A WebSocket viewer of the session sees the HTTP turns end.
    const sock = await RpcSocket.open(srv.wsUrl);
    await sock.call("session.resume", { session_id: sid });
    const done = async (turnId: string) => {
      await sock.waitForEvent(sid, (f) => f.type === "turn.complete" && f.payload.turn_id === turnId);
      return transcript(sock, sid);
    };
    const t1 = (await (await post(`/api/sessions/${sid}/prompt`, { text: "hello" })).json()) as { turn_id: string };
    const [hello] = await done(t1.turn_id);
    const t2 = await post(`/api/sessions/${sid}/prompt`, { from_message_id: hello.message_id });
    expect(t2.status).toBe(202);
    await done(((await t2.json()) as { turn_id: string }).turn_id);
    const switched = await post(`/api/sessions/${sid}/branch`, { message_id: hello.message_id });
    expect(await switched.json()).toMatchObject({ status: "switched", message_id: hello.message_id });
    const missing = await post(`/api/sessions/${sid}/prompt`, { from_message_id: "msg_nope" });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("message_not_found");
    const noText = await post(`/api/sessions/${sid}/prompt`, {});
    expect(noText.status).toBe(400);
    const patched = await fetch(`${srv.url}/api/sessions/${sid}`, { method: "PATCH", headers: { "content-type": "application/json" }, body: JSON.stringify({ system_prompt: "Be brief." }) });
    expect(patched.status).toBe(200);
    sock.close();
  });
});

describe("what a real upstream is sent", () => {
  it("the session's new system prompt from the next turn on, and after an edit only the branch before it", async () => {
    const ai = await startFakeOpenAI();
    const up = await startTestServer({ config: { providers: { up: { base_url: ai.url, models: ["m"] } } } });
    try {
      const sock = await RpcSocket.open(up.wsUrl);
      const { session_id: sid } = await sock.call("session.create", { system_prompt: "old" });
      ai.script(reply.text(["one"]), reply.text(["two"]), reply.text(["edited"]), reply.text(["plain"]));
      await turn(sock, sid, { text: "first" });
      await sock.call("session.update", { session_id: sid, system_prompt: "Be brief." });
      await turn(sock, sid, { text: "second" });
      const [first] = await transcript(sock, sid);
      await turn(sock, sid, { from_message_id: first!.message_id, text: "first, edited" });
      await sock.call("session.update", { session_id: sid, system_prompt: "" });
      await turn(sock, sid, { text: "third" });
      const sent = ai.requests.map((r) => (r.body as { messages: Array<{ role: string; content: string }> }).messages.map((m) => `${m.role}:${m.content}`));
      expect(sent).toEqual([
        ["system:old", "user:first"],
        ["system:Be brief.", "user:first", "assistant:one", "user:second"],
        ["system:Be brief.", "user:first, edited"],
        ["user:first, edited", "assistant:edited", "user:third"],
      ]);
      sock.close();
    } finally {
      await up.close();
      await ai.close();
    }
  });
});
