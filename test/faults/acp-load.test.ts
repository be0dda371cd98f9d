/**
 * ACP across a crash: an editor (`@agentclientprotocol/sdk`'s client) drives `tether acp --url`
 * against `tether serve`; the gateway is SIGKILLed mid-reply and the editor closes; the gateway
 * starts again on the same store and port, a new editor's `session/load` replays the transcript:
 * the prompt once, the agent's text exactly the stored one, once — and the session takes a new
 * prompt.
 */
import * as acp from "@agentclientprotocol/sdk";
import { tmpdir } from "node:os";
import { afterAll, describe, expect, it } from "vitest";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { tempDbPath } from "../support/temp-db.js";
import { agentText, spawnEditor, type Editor } from "../support/acp-client.js";
import { waitUntil } from "./fault-support.js";

const running: SpawnedGateway[] = [];
const editors: Editor[] = [];
afterAll(async () => {
  for (const e of editors) e.child.kill("SIGKILL");
  for (const g of running) await g.kill("SIGKILL");
});

describe("ACP session/load across a crash", () => {
  it("SIGKILL mid-reply, restart: session/load in a new editor replays the stored text once", async () => {
    const db = tempDbPath();
    const env = { TETHER_DEMO_DELAY_MS: "5" };
    const first = await spawnGateway(["--port", "0", "--db", db], env);
    running.push(first);
    const port = new URL(first.url).port;

    const editor = await spawnEditor(["--url", first.url]);
    editors.push(editor);
    await editor.initialize();
    const { sessionId } = await editor.agent.request(acp.methods.agent.session.new, { cwd: tmpdir(), mcpServers: [] });
    const cut = editor.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "count to 5000" }] }).catch((err: unknown) => err);
    await waitUntil(() => agentText(editor.updates, sessionId).split(" ").length >= 100, 20_000, "100 numbers streamed");
    first.child.kill("SIGKILL");
    await first.exited;
    // The editor goes too (closing its agent); the prompt it had in flight never got its end.
    editor.child.kill("SIGKILL");
    void cut;

    const second = await spawnGateway(["--port", port, "--db", db], env);
    running.push(second);
    const again = await spawnEditor(["--url", second.url]);
    editors.push(again);
    await again.initialize();
    await again.agent.request(acp.methods.agent.session.load, { sessionId, cwd: tmpdir(), mcpServers: [] });

    const page = (await (await fetch(`${second.url}/api/sessions/${sessionId}/messages`)).json()) as { messages: Array<{ role: string; content: string; status: string }> };
    expect(page.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    const stored = page.messages[1]!;
    expect(stored.status).toBe("interrupted");
    const users = again.updates.filter((u) => u.update.sessionUpdate === "user_message_chunk");
    expect(users).toHaveLength(1);
    const replayed = agentText(again.updates, sessionId);
    expect(replayed).toBe(stored.content);
    expect(replayed.length).toBeGreaterThan(0);
    expect(Array.from({ length: 5000 }, (_, i) => i + 1).join(" ").startsWith(replayed)).toBe(true);

    const before = again.updates.length;
    const res = await again.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "count to 3" }] });
    expect(res.stopReason).toBe("end_turn");
    expect(agentText(again.updates.slice(before), sessionId)).toBe("1 2 3");
  });
});
