/**
 * The AI SDK's resume across a crash: the AI SDK's own chat client (`AbstractChat` over
 * `DefaultChatTransport`, what `useChat` wraps) streams two long replies from `tether serve`; the
 * process is SIGKILLed mid-reply, started again on the same store and port, and each client's
 * `resumeStream()` (GET /api/chat/{id}/stream) replays the turn the crash cut from its first chunk
 * — one while the restarted gateway has not touched the session yet (the resume opens it and the
 * cut turn ends on the way), one after another surface opened the session first (the cut turn is
 * over: replayed from the store alone). Each client ends with one assistant message whose text is
 * exactly the stored one — nothing lost that was kept, nothing twice.
 */
import { afterAll, describe, expect, it } from "vitest";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { tempDbPath } from "../support/temp-db.js";
import { NodeChat, chatTransport, textOf } from "../support/ai-chat.js";
import { waitUntil } from "./fault-support.js";

const running: SpawnedGateway[] = [];
afterAll(async () => {
  for (const g of running) await g.kill("SIGKILL");
});

const COUNT = Array.from({ length: 5000 }, (_, i) => i + 1).join(" ");
/** Each chat's prompt: the stored transcript tells the two sessions apart by it. */
const PROMPTS: Record<string, string> = { untouched: "count to 5000", reopened: "count to 4999" };

interface Stored {
  session_id: string;
  content: string;
  status: string;
}

async function storedReplies(url: string): Promise<Map<string, Stored>> {
  const out = new Map<string, Stored>();
  const sessions = (await (await fetch(`${url}/api/sessions?include_ended=true`)).json()) as { sessions: Array<{ session_id: string }> };
  for (const s of sessions.sessions) {
    const page = (await (await fetch(`${url}/api/sessions/${s.session_id}/messages`)).json()) as { messages: Array<{ role: string; content: string; status: string }> };
    const prompt = page.messages.find((m) => m.role === "user")!.content;
    for (const m of page.messages.filter((x) => x.role === "assistant")) {
      expect(out.has(prompt)).toBe(false);
      out.set(prompt, { session_id: s.session_id, content: m.content, status: m.status });
    }
  }
  return out;
}

describe("AI SDK resumeStream across a crash", () => {
  it("SIGKILL mid-reply, restart: resumeStream replays each cut turn; the final text is the stored one, once", async () => {
    const db = tempDbPath();
    const env = { TETHER_DEMO_DELAY_MS: "5" };
    const first = await spawnGateway(["--port", "0", "--db", db], env);
    running.push(first);
    const port = new URL(first.url).port;

    const chats = ["untouched", "reopened"].map((id) => new NodeChat({ id, transport: chatTransport({ url: first.url }), onError: () => undefined }));
    const sent = chats.map((chat) => chat.sendMessage({ text: PROMPTS[chat.id]! }));
    await waitUntil(() => chats.every((chat) => textOf(chat.messages.at(-1)).split(" ").length >= 100), 20_000, "100 numbers streamed on both");
    first.child.kill("SIGKILL");
    await first.exited;
    await Promise.all(sent);
    for (const chat of chats) expect(chat.status).toBe("error");

    const second = await spawnGateway(["--port", port, "--db", db], env);
    running.push(second);
    // Another surface opens the second chat's session first: the cut turn is ended before its client comes back.
    const reopened = (await storedReplies(second.url)).get(PROMPTS.reopened!)!.session_id;
    expect((await fetch(`${second.url}/api/sessions/${reopened}/interrupt`, { method: "POST" })).status).toBe(200);

    for (const chat of chats) {
      await chat.resumeStream();
      expect(chat.status).toBe("ready");
    }
    const stored = await storedReplies(second.url);
    for (const chat of chats) {
      // One assistant message, its text the stored text: a prefix of the count, cut where the store kept it.
      expect(chat.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
      const final = textOf(chat.messages.at(-1));
      const reply = stored.get(PROMPTS[chat.id]!)!;
      expect(reply.status).toBe("interrupted");
      expect(final).toBe(reply.content);
      expect(final.length).toBeGreaterThan(0);
      expect(COUNT.startsWith(final)).toBe(true);
      expect(chat.messages.at(-1)!.metadata).toMatchObject({ tether: { status: "interrupted", stop_reason: "restart" } });
    }
  });
});
