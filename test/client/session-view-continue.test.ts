/**
 * SessionView's continue and queued-prompt edit against a real gateway (real sockets, real SQLite,
 * the demo provider): a continue shows no user block and its reply follows the cut one; an edited
 * queued prompt changes in place and runs in its turn of the queue.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionView, type TetherClient } from "../../src/client/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { newClient, waitFor } from "./client-support.js";

let srv: TestServer;
let client: TetherClient;
beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 2 });
  client = newClient(srv.wsUrl);
  await client.connect();
});
afterAll(async () => {
  await client.close();
  await srv.close();
});

const idle = (view: SessionView) => () => !view.getSnapshot().running && view.getSnapshot().pending.length === 0;

describe("SessionView continue and edit of a queued prompt", () => {
  it("continueReply: pending without text, then the reply goes on with no user block between", async () => {
    const created = await client.createSession({});
    const view = new SessionView(client);
    await view.open(created.session_id);
    void view.submit("count to 300");
    await waitFor(() => view.getSnapshot().blocks.some((b) => b.kind === "assistant" && b.text.length > 10), 10_000, "the first numbers");
    await client.call("session.interrupt", { session_id: created.session_id });
    await waitFor(idle(view), 10_000, "the cut");
    const sent = view.continueReply();
    expect(view.getSnapshot().pending.at(-1)).toMatchObject({ text: "", continues: true });
    expect(await sent).toBe(true);
    await waitFor(idle(view), 20_000, "the continuation");
    const blocks = view.getSnapshot().blocks;
    expect(blocks.map((b) => b.kind)).toEqual(["user", "assistant", "assistant"]);
    const [, cut, rest] = blocks as [unknown, { text: string; status: string }, { text: string; status: string }];
    expect(cut.status).toBe("interrupted");
    expect(cut.text + rest.text).toBe(Array.from({ length: 300 }, (_, i) => i + 1).join(" "));
    view.dispose();
  }, 60_000);

  it("editQueued: the queued prompt's text changes in place and runs in its turn", async () => {
    const created = await client.createSession({});
    const view = new SessionView(client);
    await view.open(created.session_id);
    await view.submit("count to 3000");
    await view.submit("one");
    await view.submit("two");
    const [one] = view.getSnapshot().pending;
    expect(one).toMatchObject({ text: "one", status: "queued" });
    expect(await view.editQueued(one!.requestId, "one, edited")).toBe("edited");
    expect(view.getSnapshot().pending.map((q) => q.text)).toEqual(["one, edited", "two"]);
    await client.call("session.interrupt", { session_id: created.session_id });
    await waitFor(idle(view), 20_000, "the queue");
    expect(view.getSnapshot().blocks.filter((b) => b.kind === "user").map((b) => (b as { text: string }).text)).toEqual(["count to 3000", "one, edited", "two"]);
    view.dispose();
  }, 60_000);
});
