/**
 * AG-UI's reconnect across a crash: `@ag-ui/client`'s HttpAgent runs a long reply on `tether serve`;
 * the process is SIGKILLed mid-run, started again on the same store and port, and the client posts
 * the same run again (same thread, same run id): the run is not started twice — the stream opens
 * with the thread's stored messages (MESSAGES_SNAPSHOT), replays the reply the crash cut, and ends;
 * the client holds one assistant message whose text is exactly the stored one.
 */
import { HttpAgent } from "@ag-ui/client";
import { EventType, type BaseEvent } from "@ag-ui/core";
import { afterAll, describe, expect, it } from "vitest";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { tempDbPath } from "../support/temp-db.js";

const running: SpawnedGateway[] = [];
afterAll(async () => {
  for (const g of running) await g.kill("SIGKILL");
});

describe("AG-UI reconnect across a crash", () => {
  it("SIGKILL mid-run, restart: the same run posted again replays the cut reply once; its text is the stored one", async () => {
    const db = tempDbPath();
    const env = { TETHER_DEMO_DELAY_MS: "5" };
    const first = await spawnGateway(["--port", "0", "--db", db], env);
    running.push(first);
    const port = new URL(first.url).port;
    const url = `${first.url}/ag-ui`;

    const agent = new HttpAgent({ url, threadId: "crash-thread" });
    agent.addMessage({ id: "u1", role: "user", content: "count to 5000" });
    let contents = 0;
    let killed: Promise<number | null> | undefined;
    await agent
      .runAgent({ runId: "run-1" }, {
        onTextMessageContentEvent: () => {
          if (++contents === 100) {
            // The client lets go of the stream as the process dies. (Left to find the cut itself,
            // @ag-ui/client 1.0's reader teardown rethrows the socket error as an unhandled rejection.)
            agent.abortRun();
            first.child.kill("SIGKILL");
            killed = first.exited;
          }
        },
      })
      .catch(() => undefined);
    await killed;
    expect(contents).toBeGreaterThanOrEqual(100);

    const second = await spawnGateway(["--port", port, "--db", db], env);
    running.push(second);
    const again = new HttpAgent({ url, threadId: "crash-thread", initialMessages: [{ id: "u1", role: "user", content: "count to 5000" }] });
    const events: BaseEvent[] = [];
    await again.runAgent({ runId: "run-1" }, { onEvent: ({ event }) => void events.push(event) });
    expect(events.map((e) => e.type).slice(0, 2)).toEqual([EventType.RUN_STARTED, EventType.MESSAGES_SNAPSHOT]);
    expect(events.at(-1)).toMatchObject({ type: EventType.RUN_FINISHED, outcome: { type: "cancelled" }, result: { status: "interrupted", stop_reason: "restart" } });

    const sessions = (await (await fetch(`${second.url}/api/sessions`)).json()) as { sessions: Array<{ session_id: string }> };
    expect(sessions.sessions).toHaveLength(1);
    const page = (await (await fetch(`${second.url}/api/sessions/${sessions.sessions[0]!.session_id}/messages`)).json()) as { messages: Array<{ role: string; content: string; status: string }> };
    // The run was not started again: one prompt, one (cut) reply.
    expect(page.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    const stored = page.messages[1]!;
    expect(stored.status).toBe("interrupted");
    const replies = again.messages.filter((m) => m.role === "assistant") as Array<{ content?: string }>;
    expect(replies).toHaveLength(1);
    expect(replies[0]!.content).toBe(stored.content);
    expect(stored.content.length).toBeGreaterThan(0);
    expect(Array.from({ length: 5000 }, (_, i) => i + 1).join(" ").startsWith(stored.content)).toBe(true);
  });
});
