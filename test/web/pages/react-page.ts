/**
 * A small React page for the browser suite, bundled by the test with esbuild and served on the
 * gateway's own origin (so its requests pass the Origin check as any same-origin app's would):
 *
 *   ?mode=ai&id=<chat id>        `useChat` from @ai-sdk/react over DefaultChatTransport → POST /api/chat, `resume: true`
 *   ?mode=session&sid=<session>  `useSession` (the SDK's React hook) over a TetherClient → /ws
 *
 * It renders plain elements with data attributes the test reads, and puts a `send` on window.
 */
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport } from "ai";
import { createElement as h, useEffect } from "react";
import { createRoot } from "react-dom/client";
import { TetherClient } from "../../../src/client/index.js";
import { useSession } from "../../../src/react/index.js";

declare global {
  interface Window {
    tetherTest?: { send(text: string): void };
  }
}

const query = new URLSearchParams(location.search);
const transport = new DefaultChatTransport({ api: "/api/chat" });

function AiChat(props: { id: string }) {
  const chat = useChat({ id: props.id, transport, resume: true });
  useEffect(() => {
    window.tetherTest = { send: (text) => void chat.sendMessage({ text }) };
  });
  return h(
    "div",
    { "data-testid": "chat", "data-status": chat.status, "data-error": chat.error?.message ?? "" },
    chat.messages.map((m) =>
      h("div", { key: m.id, className: "msg", "data-role": m.role }, m.parts.map((p) => (p.type === "text" ? p.text : "")).join("")),
    ),
  );
}

const client = query.get("mode") === "session" ? new TetherClient({ url: `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws` }) : undefined;

function Session(props: { sid: string }) {
  const s = useSession(client, props.sid);
  useEffect(() => {
    window.tetherTest = { send: (text) => void s.submit(text) };
  });
  return h(
    "div",
    { "data-testid": "session", "data-link": s.link.state, "data-running": String(s.running), "data-pending": String(s.pending.length), "data-loading": String(s.loading) },
    s.blocks.map((b) => h("div", { key: b.key, className: "block", "data-kind": b.kind }, b.kind === "user" || b.kind === "assistant" ? b.text : "")),
  );
}

async function main(): Promise<void> {
  if (client) await client.connect();
  const root = createRoot(document.getElementById("root")!);
  root.render(query.get("mode") === "session" ? h(Session, { sid: query.get("sid")! }) : h(AiChat, { id: query.get("id")! }));
}

void main();
