/**
 * Bots of peer gateways (config `peers`), reached over A2A through the official SDK's client
 * (`A2AClient` of `@a2a-js/sdk`, imported on first use). An envelope to `bot@peer` is one
 * `message/send` to the bot's Agent Card endpoint, with the envelope id as the message id — so a
 * retry after a failure or a crash is the same message, and a Tether peer answers it with the same
 * turn — carrying the sender's bot name in `metadata.from`. The reply is the task's result: its
 * status message (or its artifacts, or a direct message). Anything else throws, and the outbox
 * keeps the envelope pending and retries it.
 */
import type { Message, Part, Task } from "@a2a-js/sdk";
import type { EnvelopeRow } from "../../store/types.js";
import type { RemoteAgents } from "./outbox.js";

export interface PeerSettings {
  url: string;
  api_key?: string | undefined;
  agent_card_url?: string | undefined;
}

export class A2APeers implements RemoteAgents {
  /** `peers` as configured now (read at every send: a reload applies at once). */
  constructor(private readonly peers: () => Record<string, PeerSettings>) {}

  has(peer: string): boolean {
    return Object.hasOwn(this.peers(), peer);
  }

  async send(e: EnvelopeRow): Promise<{ reply: string; task_id: string | null }> {
    const peer = this.peers()[e.peer ?? ""];
    if (!peer) throw new Error(`no peer named "${e.peer}" is configured`);
    const { A2AClient } = await import("@a2a-js/sdk/client");
    const key = peer.api_key;
    const fetchImpl: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      if (key) headers.set("authorization", `Bearer ${key}`);
      return fetch(input, { ...init, headers });
    };
    const cardUrl = peer.agent_card_url ?? `${peer.url.replace(/\/+$/, "")}/a2a/bots/${encodeURIComponent(e.to_name)}/.well-known/agent-card.json`;
    const client = await A2AClient.fromCardUrl(cardUrl, { fetchImpl });
    const message: Message = {
      kind: "message",
      messageId: e.id,
      role: "user",
      parts: [{ kind: "text", text: e.text }],
      metadata: { from: e.from_name },
    };
    const answer = await client.sendMessage({ message, configuration: { blocking: true, acceptedOutputModes: ["text"] } });
    if ("error" in answer) throw new Error(`${e.to} answered with A2A error ${answer.error.code}: ${answer.error.message}`);
    const result = answer.result;
    if (result.kind === "message") return { reply: textOf(result.parts), task_id: null };
    return { reply: replyOfTask(result), task_id: result.id };
  }
}

function textOf(parts: readonly Part[]): string {
  return parts.flatMap((p) => (p.kind === "text" ? [p.text] : [])).join("\n");
}

/** A finished task's answer: its status message, else its artifacts' text. A task still running is not an answer yet. */
function replyOfTask(task: Task): string {
  const state = task.status.state;
  if (state === "submitted" || state === "working") throw new Error(`the task ${task.id} is still ${state}`);
  const text = (task.status.message ? textOf(task.status.message.parts) : "") || (task.artifacts ?? []).map((a) => textOf(a.parts)).join("\n");
  return state === "completed" ? text : `(the agent's task ended ${state})${text ? `\n${text}` : ""}`;
}
