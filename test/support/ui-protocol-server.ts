/**
 * The gateway the UI-protocol suites (AI SDK chat, AG-UI) drive: two principals by API key, so each
 * suite can play the other principal as an attacker, and a profile `asks` whose todo tool waits for
 * an approval.
 */
import { startTestServer, tempDbPath, type TestServer } from "./start-server.js";

export const KEY_A = "key-a";
export const KEY_B = "key-b";
export const auth = (key: string): Record<string, string> => ({ Authorization: `Bearer ${key}` });

export function startUiProtocolServer(): Promise<TestServer> {
  return startTestServer({
    demoDelayMs: 0,
    config: {
      auth: { keys: { [KEY_A]: "alice", [KEY_B]: "bob" } },
      profiles: { asks: { db: tempDbPath(), tools: { policy: { todo: "ask" } } } },
    },
  });
}
