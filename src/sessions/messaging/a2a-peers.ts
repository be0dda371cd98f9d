/**
 * Bots of peer gateways (config `peers`), reached over A2A through the official SDK's client
 * (`A2AClient` of `@a2a-js/sdk`, imported on first use). An envelope to `bot@peer` is one
 * `message/send` to the bot's endpoint, with the envelope id as the message id — so a retry after
 * a failure or a crash is the same message, and a Tether peer answers it with the same turn —
 * carrying the sender's bot name in `metadata.from`. A task that comes back unfinished is polled
 * with `tasks/get` by its id.
 *
 * The operator's config is the trust boundary, not the peer's answers:
 * - every request goes to the configured peer's origin (`url`, or `agent_card_url`) and nowhere
 *   else: an Agent Card whose `url` names another origin is refused, redirects are not followed;
 * - the peer's `api_key` is sent only there (it rides on those requests and no others);
 * - what a peer answers is bounded (PEER_RESPONSE_MAX_BYTES), and an error carries the HTTP status
 *   or A2A error code and a short reason of ours — never the peer's body, which would reach the
 *   model and `agent.outbox` (a server-side request forgery with readable responses otherwise).
 * Errors a retry cannot fix (no such bot, a refused key, an invalid request) are terminal: the
 * outbox tells the sender at once instead of retrying forever.
 */
import type { AgentCard, Message, Part, Task } from "@a2a-js/sdk";
import type { EnvelopeRow } from "../../store/types.js";
import { replyText } from "../delivery/turn-answer.js";
import type { RemoteAgents, RemoteResult } from "./outbox.js";

export interface PeerSettings {
  url: string;
  api_key?: string | undefined;
  agent_card_url?: string | undefined;
}

/** The most a peer's answer (a card, a JSON-RPC response) may weigh; more is refused. */
export const PEER_RESPONSE_MAX_BYTES = 4 * 1024 * 1024;

/** A peer's failure, in our words: status or code and a short reason, whether a retry can help. */
export class PeerError extends Error {
  override name = "PeerError";
  constructor(
    readonly peer: string,
    readonly reason: string,
    /** No retry can fix it: the sender is told at once. */
    readonly terminal: boolean,
  ) {
    super(`peer ${peer}: ${reason}`);
  }
}

/** A2A (and JSON-RPC) error codes a retry of the same request cannot fix, with our name for each. */
const TERMINAL_CODES: Record<number, string> = {
  [-32700]: "parse error",
  [-32600]: "invalid request",
  [-32601]: "method not found",
  [-32602]: "invalid params",
  [-32001]: "task not found",
  [-32002]: "task not cancelable",
  [-32003]: "push notifications not supported",
  [-32004]: "unsupported operation",
  [-32005]: "content type not supported",
  [-32006]: "invalid agent response",
};

type Sdk = typeof import("@a2a-js/sdk/client");

export class A2APeers implements RemoteAgents {
  /** `peers` as configured now (read at every send: a reload applies at once). */
  constructor(private readonly peers: () => Record<string, PeerSettings>) {}

  has(peer: string): boolean {
    return Object.hasOwn(this.peers(), peer);
  }

  async send(e: EnvelopeRow): Promise<RemoteResult> {
    const client = await this.client(e);
    const message: Message = { kind: "message", messageId: e.id, role: "user", parts: [{ kind: "text", text: e.text }], metadata: { from: e.from_name } };
    const answer = await client.call(() => client.sdk.sendMessage({ message, configuration: { blocking: true, acceptedOutputModes: ["text"] } }));
    return answer.kind === "message" ? { kind: "reply", reply: textOf(answer.parts), status: "complete", task_id: null } : resultOfTask(answer);
  }

  /** The task an earlier send left unfinished (`recipient_turn_id`), as the peer has it now. */
  async poll(e: EnvelopeRow): Promise<RemoteResult> {
    const client = await this.client(e);
    return resultOfTask(await client.call(() => client.sdk.getTask({ id: e.recipient_turn_id! })));
  }

  /** The SDK's client for the envelope's bot, from its card, on a fetch that keeps to the peer's origin. */
  private async client(e: EnvelopeRow): Promise<{ sdk: InstanceType<Sdk["A2AClient"]>; call: <T>(rpc: () => Promise<RpcAnswer<T>>) => Promise<T> }> {
    const name = e.peer ?? "";
    const peer = this.peers()[name];
    if (!peer) throw new PeerError(name, "no such peer is configured (config peers)", true);
    const guard = new PeerFetch(name, peer);
    const cardUrl = peer.agent_card_url ?? `${peer.url.replace(/\/+$/, "")}/a2a/bots/${encodeURIComponent(e.to_name)}/.well-known/agent-card.json`;
    const card = await guard.card(cardUrl, e.to_name);
    const { A2AClient } = await import("@a2a-js/sdk/client");
    const sdk = new A2AClient(card, { fetchImpl: guard.fetch });
    return { sdk, call: (rpc) => guard.call(rpc) };
  }
}

type RpcAnswer<T> = { result: T } | { error: { code: number; message: string } };

/** One envelope's requests to one peer: its origins only, its key on them, each answer bounded, errors in our words. */
class PeerFetch {
  private readonly origins: Set<string>;
  /** The last HTTP status seen: the SDK's own errors carry the body, ours carry this. */
  private lastStatus: number | undefined;

  constructor(
    private readonly name: string,
    private readonly peer: PeerSettings,
  ) {
    this.origins = new Set([new URL(peer.url).origin, ...(peer.agent_card_url ? [new URL(peer.agent_card_url).origin] : [])]);
  }

  readonly fetch: typeof fetch = async (input, init) => {
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    // The card's endpoint is the peer's word: it may only lead back to where the operator pointed.
    if (!this.origins.has(url.origin)) throw new PeerError(this.name, "the Agent Card names an endpoint outside the configured peer's origin; refused", true);
    const headers = new Headers(init?.headers);
    if (this.peer.api_key) headers.set("authorization", `Bearer ${this.peer.api_key}`);
    let res: Response;
    try {
      res = await fetch(url, { ...init, headers, redirect: "manual" });
    } catch (err) {
      throw new PeerError(this.name, `unreachable (${networkCode(err)})`, false);
    }
    this.lastStatus = res.status;
    if (res.status >= 300 && res.status < 400) throw new PeerError(this.name, `answered with a redirect (HTTP ${res.status}); redirects are not followed`, true);
    return bounded(res, this.name);
  };

  /** The bot's Agent Card, checked: its `url` on the peer's origin. */
  async card(cardUrl: string, bot: string): Promise<AgentCard> {
    const res = await this.fetch(cardUrl, { headers: { accept: "application/json" } });
    if (res.status === 404) throw new PeerError(this.name, `has no bot named "${bot}" (HTTP 404)`, true);
    if (!res.ok) throw statusError(this.name, res.status);
    const card = (await res.json().catch(() => null)) as AgentCard | null;
    if (!card || typeof card.url !== "string" || !URL.canParse(card.url)) throw new PeerError(this.name, "sent an Agent Card without a valid url", true);
    if (!this.origins.has(new URL(card.url).origin)) throw new PeerError(this.name, "the Agent Card names an endpoint outside the configured peer's origin; refused", true);
    return card;
  }

  /** One JSON-RPC call: its result, or a PeerError saying what went wrong in our words. */
  async call<T>(rpc: () => Promise<RpcAnswer<T>>): Promise<T> {
    this.lastStatus = undefined;
    let answer: RpcAnswer<T>;
    try {
      answer = await rpc();
    } catch (err) {
      if (err instanceof PeerError) throw err;
      // The SDK's message quotes the peer's body: only the status is kept.
      if (this.lastStatus !== undefined && (this.lastStatus < 200 || this.lastStatus >= 300)) throw statusError(this.name, this.lastStatus);
      throw new PeerError(this.name, "sent an answer that is not A2A JSON-RPC", false);
    }
    if ("error" in answer) {
      const code = answer.error.code;
      const known = TERMINAL_CODES[code];
      throw new PeerError(this.name, `answered A2A error ${code}${known ? ` (${known})` : ""}`, known !== undefined);
    }
    return answer.result;
  }
}

function statusError(peer: string, status: number): PeerError {
  if (status === 401 || status === 403) return new PeerError(peer, `refused this gateway's key (HTTP ${status})`, true);
  if (status === 404) return new PeerError(peer, "has no such A2A endpoint (HTTP 404)", true);
  if (status === 413) return new PeerError(peer, "refused the message as too large (HTTP 413)", true);
  if (status === 429) return new PeerError(peer, "is rate limiting (HTTP 429)", false);
  if (status >= 400 && status < 500) return new PeerError(peer, `refused the request (HTTP ${status})`, true);
  return new PeerError(peer, `failed (HTTP ${status})`, false);
}

/** The code of a network failure (ECONNREFUSED, …): ours to say, nothing the peer wrote. */
function networkCode(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown } })?.cause;
  return typeof cause?.code === "string" && /^[A-Z_]+$/.test(cause.code) ? cause.code : "network error";
}

/** The response with a body that errors once it passes PEER_RESPONSE_MAX_BYTES. */
function bounded(res: Response, peer: string): Response {
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > PEER_RESPONSE_MAX_BYTES) throw new PeerError(peer, `answered more than ${PEER_RESPONSE_MAX_BYTES} bytes; refused`, true);
  if (!res.body) return res;
  let seen = 0;
  const limit = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, out) {
      seen += chunk.byteLength;
      if (seen > PEER_RESPONSE_MAX_BYTES) out.error(new PeerError(peer, `answered more than ${PEER_RESPONSE_MAX_BYTES} bytes; refused`, true));
      else out.enqueue(chunk);
    },
  });
  return new Response(res.body.pipeThrough(limit), { status: res.status, statusText: res.statusText, headers: res.headers });
}

function textOf(parts: readonly Part[]): string {
  return parts.flatMap((p) => (p.kind === "text" ? [p.text] : [])).join("\n");
}

/**
 * A task's answer: its status message, else its artifacts' text, whole only when it completed
 * (a failed or canceled task's text is marked so). Still running: to be polled by its id.
 */
function resultOfTask(task: Task): RemoteResult {
  const state = task.status.state;
  if (state === "submitted" || state === "working") return { kind: "working", task_id: task.id };
  const text = (task.status.message ? textOf(task.status.message.parts) : "") || (task.artifacts ?? []).map((a) => textOf(a.parts)).join("\n");
  if (state === "completed") return { kind: "reply", reply: text, status: "complete", task_id: task.id };
  const status = state === "canceled" ? "interrupted" : "failed";
  return { kind: "reply", reply: replyText({ ok: false, text, status, reason: `the A2A task ended ${state}` }), status, task_id: task.id };
}
