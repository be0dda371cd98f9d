/**
 * SessionView and the transcript reducer over frame logs recorded from a real gateway (real
 * sockets, real SQLite, the demo provider): what frames build equals what the store holds, a
 * snapshot after a gap puts the text right once, versions (branching) follow, the submit's
 * retry never runs a prompt twice, and background processes follow their frames and process.list.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  applyFrame,
  isFrameOf,
  applyMessageSnapshot,
  fromSnapshot,
  SessionView,
  type Block,
  type Frame,
  type ProcessInfo,
  type SessionModel,
  type TetherClient,
} from "../../src/client/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { newClient, waitFor } from "./client-support.js";
import { losingFirstSubmitAnswer } from "../support/losing-websocket.js";

let srv: TestServer;
const clients: TetherClient[] = [];
beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 1 });
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await srv.close();
});

async function connected(opts: Parameters<typeof newClient>[1] = {}): Promise<TetherClient> {
  const c = newClient(srv.wsUrl, opts);
  clients.push(c);
  await c.connect();
  return c;
}

/** What a reader sees of a block: kind, key, text, status, versions, a tool's name and outcome (not live-only details such as durations). */
function seen(b: Block): unknown {
  switch (b.kind) {
    case "user":
      return { kind: b.kind, key: b.key, text: b.text, versions: b.versions?.length ?? 1 };
    case "assistant":
      return { kind: b.kind, key: b.key, text: b.text, status: b.status };
    case "tool":
      return { kind: b.kind, key: b.key, name: b.name, done: b.done, error: b.error };
    default:
      return { kind: b.kind, key: b.key };
  }
}

/** The transcript a fresh viewer builds from the store (a resume's Snapshot). */
async function stored(sessionId: string): Promise<unknown[]> {
  const reader = await connected();
  return fromSnapshot(await reader.resumeSession(sessionId)).blocks.map(seen);
}

function idle(view: SessionView): () => boolean {
  return () => {
    const s = view.getSnapshot();
    return !s.running && s.pending.length === 0;
  };
}

describe("SessionView over a real gateway", () => {
  it("a recorded frame log reduces to the stored transcript: tools, todo, usage, versions made and switched", async () => {
    const client = await connected();
    const created = await client.createSession({});
    const log: Frame[] = [];
    const view = new SessionView(client, { onFrame: (f) => void log.push(f) });
    let renders = 0;
    view.subscribe(() => void renders++);
    await view.open(created.session_id);

    expect(await view.submit("todo: write; test")).toBe(true);
    await waitFor(() => log.some((f) => f.type === "turn.complete") && idle(view)(), 20_000, "the todo turn");
    expect(await view.submit("count to 5")).toBe(true);
    await waitFor(() => log.filter((f) => f.type === "turn.complete").length === 2 && idle(view)(), 20_000, "the count turn");
    const firstUser = view.getSnapshot().blocks.find((b) => b.kind === "user")!;
    const firstReplies = view.getSnapshot().blocks.map(seen);

    // A new version of the first prompt (a regenerate): what followed it leaves the view.
    expect(await view.regenerate(firstUser.key)).toBe(true);
    await waitFor(() => log.filter((f) => f.type === "turn.complete").length === 3 && idle(view)(), 20_000, "the regenerated turn");
    const regenerated = view.getSnapshot();
    const users = regenerated.blocks.filter((b) => b.kind === "user");
    expect(users).toHaveLength(1);
    expect(users[0]!.kind === "user" && users[0]!.versions).toHaveLength(2);
    expect(regenerated.blocks.some((b) => b.kind === "assistant" && b.text === "1 2 3 4 5")).toBe(false);
    expect(regenerated.blocks.map(seen)).toEqual(await stored(created.session_id));

    // Back to the first version: its branch as it was, the versions kept.
    await client.selectVersion(created.session_id, firstUser.key);
    await waitFor(() => log.some((f) => f.type === "branch.switched"), 10_000, "branch.switched");
    const switched = view.getSnapshot();
    expect(switched.blocks.some((b) => b.kind === "assistant" && b.text === "1 2 3 4 5")).toBe(true);
    expect(switched.blocks.map(seen)).toEqual(await stored(created.session_id));
    expect(switched.blocks.map(seen).filter((b) => (b as { kind: string }).kind !== "user")).toEqual(
      firstReplies.filter((b) => (b as { kind: string }).kind !== "user"),
    );

    expect(switched.todo.items.map((i) => i.content)).toEqual(["write", "test"]);
    expect(switched.usage.total_tokens).toBeGreaterThan(0);
    expect(switched.link.state).toBe("connected");
    expect(renders).toBeGreaterThan(log.length / 4);
    // getSnapshot is stable between changes (useSyncExternalStore needs it) and new after one.
    expect(view.getSnapshot()).toBe(view.getSnapshot());

    // The reducer alone, over the recorded log from the creation Snapshot, gets the same.
    const replayed = fromSnapshot(created);
    for (const f of log) applyFrame(replayed, f);
    expect(replayed.blocks.map(seen)).toEqual(switched.blocks.map(seen));
    expect(replayed.todo).toEqual(switched.todo);
    view.dispose();
  }, 90_000);

  it("resync: after a gap in the deltas, a MessageSnapshot puts the text right and later deltas append once", async () => {
    const client = await connected();
    const created = await client.createSession({});
    const log: Frame[] = [];
    const view = new SessionView(client, { onFrame: (f) => void log.push(f) });
    await view.open(created.session_id);
    await view.submit("count to 40");
    await waitFor(() => log.some((f) => f.type === "turn.complete") && idle(view)(), 20_000, "the turn");
    const reply = view.getSnapshot().blocks.find((b) => b.kind === "assistant")!;
    expect(reply.kind === "assistant" && reply.text).toBe(Array.from({ length: 40 }, (_, i) => i + 1).join(" "));

    // The same log with deltas 10..24 lost (evicted from the replay ring while away): the snapshot
    // the gateway would send carries the text of every delta up to the gap's end.
    const deltas = log.filter((f) => f.type === "message.delta");
    const lost = new Set(deltas.slice(10, 25));
    const upTo = deltas[24]!;
    const textOf = (frames: Frame[]) => frames.map((d) => (isFrameOf(d, "message.delta") ? d.payload.text : "")).join("");
    const model: SessionModel = fromSnapshot(created);
    const streamed = () => model.blocks.find((b) => b.key === reply.key);
    for (const f of log) {
      // Before message.complete (whose content is authoritative anyway): the streamed text alone is right.
      if (isFrameOf(f, "message.complete") && f.payload.message_id === reply.key) expect(streamed()).toMatchObject({ text: textOf(deltas), status: "streaming" });
      if (lost.has(f)) continue;
      applyFrame(model, f);
      if (f === deltas[9]) {
        applyMessageSnapshot(model, { message_id: reply.key, role: "assistant", text: textOf(deltas.slice(0, 25)), reasoning: "", as_of_seq: upTo.seq! });
      }
    }
    expect(model.blocks.map(seen)).toEqual(view.getSnapshot().blocks.map(seen));
    view.dispose();
  }, 60_000);

  it("resync for real: connections dropped mid-reply, the view's text is the stored text, each block once", async () => {
    const client = await connected({ backoff: { initialMs: 20, maxMs: 100 } });
    const created = await client.createSession({});
    const view = new SessionView(client);
    await view.open(created.session_id);
    let deltas = 0;
    const expected = Array.from({ length: 800 }, (_, i) => i + 1).join(" ");
    const wrong: string[] = [];
    // Subscribed after the view: at each delta, the view has applied it; its text must be a prefix of the whole, never a gap or a repeat.
    const off = client.subscribe(created.session_id, (f) => {
      if (f.type !== "message.delta") return;
      const b = view.getSnapshot().blocks.find((x) => x.kind === "assistant");
      if (b?.kind === "assistant" && !expected.startsWith(b.text)) wrong.push(b.text.slice(-40));
      if (++deltas % 150 === 0 && deltas <= 450) srv.dropConnections();
    });
    await view.submit("count to 800");
    await waitFor(() => view.getSnapshot().blocks.some((b) => b.kind === "assistant" && b.status === "complete"), 60_000, "the reply");
    off();
    expect(wrong).toEqual([]);
    expect(deltas).toBeGreaterThan(450);
    const blocks = view.getSnapshot().blocks;
    expect(new Set(blocks.map((b) => b.key)).size).toBe(blocks.length);
    expect(blocks.map(seen)).toEqual(await stored(created.session_id));
    view.dispose();
  }, 90_000);
});

describe("SessionView submit", () => {
  it("a prompt whose answer was lost is sent again with the same request_id and runs once", async () => {
    const losing = losingFirstSubmitAnswer();
    const client = await connected({ WebSocket: losing.WebSocket, backoff: { initialMs: 20, maxMs: 100 } });
    const created = await client.createSession({});
    const view = new SessionView(client, { retry: { delayMs: 20 } });
    await view.open(created.session_id);
    expect(await view.submit("count to 3")).toBe(true);
    expect(losing.sent()).toBeGreaterThanOrEqual(2);
    await waitFor(idle(view), 20_000, "the turn");
    const reader = await connected();
    const users = (await reader.call("session.messages", { session_id: created.session_id })).messages.filter((m) => m.role === "user");
    expect(users.map((m) => m.content)).toEqual(["count to 3"]);
    expect(view.getSnapshot().blocks.filter((b) => b.kind === "user")).toHaveLength(1);
    view.dispose();
  }, 60_000);

  it("without the retry the same loss leaves the prompt failed (what the retry is for)", async () => {
    const losing = losingFirstSubmitAnswer();
    const client = await connected({ WebSocket: losing.WebSocket, backoff: { initialMs: 20, maxMs: 100 } });
    const created = await client.createSession({});
    const view = new SessionView(client, { retry: { attempts: 1 } });
    await view.open(created.session_id);
    expect(await view.submit("count to 3")).toBe(false);
    expect(view.getSnapshot().pending.map((p) => p.status)).toEqual(["failed"]);
    view.dispose();
  }, 60_000);
});

describe("SessionView: background processes", () => {
  const work = realpathSync(mkdtempSync(join(tmpdir(), "tether-view-proc-")));
  let procSrv: TestServer;
  beforeAll(async () => {
    procSrv = await startTestServer({ demoDelayMs: 0, config: { tools: { workspace: { roots: [work] }, policy: { terminal: "auto" } } } as never });
  });
  afterAll(async () => {
    await procSrv?.close();
    rmSync(work, { recursive: true, force: true });
  });

  /** What a panel shows of a process. */
  const shown = (p: ProcessInfo) => ({ id: p.id, command: p.command, cwd: p.cwd, pid: p.pid, status: p.status, exit_code: p.exit_code ?? null, signal: p.signal ?? null });

  it("follows a process from its frames (started, output, killed), as process.list has it, and a view opened later is seeded from the list", async () => {
    const client = newClient(procSrv.wsUrl);
    clients.push(client);
    await client.connect();
    const created = await client.createSession({ cwd: work });
    const log: Frame[] = [];
    const view = new SessionView(client, { onFrame: (f) => void log.push(f) });
    await view.open(created.session_id);
    // Writes "two" only once the test creates ./go: that text reaches the view by process.output frames alone.
    const command = "echo one; while [ ! -f go ]; do sleep 0.05; done; echo two; sleep 60";
    await view.submit(`call: terminal ${JSON.stringify({ command, background: true })}`);
    await waitFor(() => view.getSnapshot().processes.length === 1 && idle(view)(), 20_000, "the process in the view");
    const [proc] = view.getSnapshot().processes;
    writeFileSync(join(work, "go"), "");
    await waitFor(() => view.getSnapshot().processes[0]!.output_tail.includes("two\n"), 10_000, "the output after ./go");
    expect(view.getSnapshot().processes[0]!.output_tail).toBe("one\ntwo\n");
    const listed = (await client.call("process.list", { session_id: created.session_id })).processes;
    expect(view.getSnapshot().processes.map(shown)).toEqual(listed.map(shown));
    expect(proc!.status).toBe("running");

    // Another view of the session, opened after the process started: seeded from process.list.
    const later = new SessionView(client);
    await later.open(created.session_id);
    await waitFor(() => later.getSnapshot().processes.length === 1, 10_000, "the later view's processes");
    expect(later.getSnapshot().processes.map(shown)).toEqual(listed.map(shown));

    // Stop: the process.exited frame ends it in every view.
    const killed = await view.killProcess(proc!.id);
    expect(killed.status).toBe("killed");
    await waitFor(() => view.getSnapshot().processes[0]?.status === "killed", 10_000, "the view sees it killed");
    await waitFor(() => later.getSnapshot().processes[0]?.status === "killed", 10_000, "the later view sees it killed");
    const after = (await client.call("process.list", { session_id: created.session_id })).processes;
    expect(view.getSnapshot().processes.map(shown)).toEqual(after.map(shown));
    expect(later.getSnapshot().processes.map(shown)).toEqual(after.map(shown));

    // The reducer alone over the recorded log, from the creation Snapshot: the same processes.
    const replayed = fromSnapshot(created);
    for (const f of log) applyFrame(replayed, f);
    expect(Object.values(replayed.processes ?? {}).map(shown)).toEqual(after.map(shown));
    expect(log.filter((f) => f.type === "process.output").length).toBeGreaterThan(0);
    later.dispose();
    view.dispose();
  }, 60_000);
});
