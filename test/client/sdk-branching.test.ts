/** The SDK's branching calls against the real gateway: edit, regenerate, select, and the frames a subscriber gets. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode, RpcError, type Frame } from "../../src/client/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { newClient } from "./client-support.js";

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 1 });
});
afterAll(async () => {
  await srv.close();
});

describe("TetherClient branching", () => {
  it("editPrompt, regenerate and selectVersion: frames in seq order to subscribers, versions in the transcript", async () => {
    const client = newClient(srv.wsUrl);
    await client.connect();
    const snap = await client.createSession({});
    const sid = snap.session_id;
    const frames: Frame[] = [];
    client.subscribe(sid, (f) => void frames.push(f));
    const ended = (turnId: string) =>
      new Promise<void>((resolve) => {
        const poll = () => (frames.some((f) => f.type === "turn.complete" && (f.payload as { turn_id: string }).turn_id === turnId) ? resolve() : setTimeout(poll, 10));
        poll();
      });
    const first = await client.call("prompt.submit", { session_id: sid, text: "first" });
    await ended(first.turn_id);
    const [prompt] = (await client.call("session.messages", { session_id: sid })).messages;
    const edited = await client.editPrompt(sid, prompt!.message_id, "second", "edit-1");
    await ended(edited.turn_id);
    const regen = await client.regenerate(sid, prompt!.message_id).catch((e: unknown) => e);
    // The first version is not shown any more: select it before redoing it.
    expect((regen as RpcError).code).toBe(ErrorCode.NotBranchable);
    const selected = await client.selectVersion(sid, prompt!.message_id);
    expect(selected.status).toBe("switched");
    const again = await client.regenerate(sid, prompt!.message_id);
    await ended(again.turn_id);
    const types = frames.map((f) => f.type).filter((t) => t.startsWith("branch."));
    expect(types).toEqual(["branch.created", "branch.switched", "branch.created"]);
    const seqs = frames.map((f) => f.seq!);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    const users = (await client.call("session.messages", { session_id: sid })).messages.filter((m) => m.role === "user");
    expect(users).toHaveLength(1);
    expect(users[0]!.content).toBe("first");
    expect(users[0]!.versions).toHaveLength(3);
    await client.close();
  });
});
