/**
 * Every bot of this gateway as an A2A agent, through the official SDK (`@a2a-js/sdk`): its Agent
 * Card at `GET /a2a/bots/{name}/.well-known/agent-card.json` (public: name, description, the
 * endpoint and that it wants the gateway's bearer key), and its JSON-RPC endpoint at
 * `POST /a2a/bots/{name}` (behind the gateway's auth; the caller's key is the principal). The
 * SDK's `DefaultRequestHandler` and `JsonRpcTransportHandler` speak the protocol; the executor
 * only asks the bot (`messaging.answer`) and publishes the answer as the task's result.
 *
 * The SDK is imported on the first A2A request, never at start.
 */
import type { Context, Hono } from "hono";
import type { AgentCard, Message, Task } from "@a2a-js/sdk";
import type { AgentExecutor, ExecutionEventBus, RequestContext } from "@a2a-js/sdk/server";
import type { Caller, ProfileRegistry } from "../../sessions/index.js";
import type { Logger } from "../../lib/logger.js";
import type { AppEnv } from "./context.js";

type Sdk = typeof import("@a2a-js/sdk/server");
type Handler = InstanceType<Sdk["JsonRpcTransportHandler"]>;

export interface A2ADeps {
  profiles: ProfileRegistry;
  logger: Logger;
  version: string;
}

/** The public routes (Agent Cards): mounted before auth. */
export function mountA2ACards(app: Hono<AppEnv>, deps: A2ADeps): void {
  app.get("/a2a/bots/:name/.well-known/agent-card.json", (c) => {
    const bot = deps.profiles.messaging.bot(c.req.param("name"));
    if (!bot) return c.json({ error: { message: `No bot named "${c.req.param("name")}"`, type: "not_found", code: "unknown_bot" } }, 404);
    return c.json(agentCard(origin(c), bot.name, bot.description, deps.version));
  });
}

/** The JSON-RPC endpoints: mounted after auth. */
export function mountA2A(app: Hono<AppEnv>, deps: A2ADeps): void {
  const handlers = new Map<string, Promise<Handler>>();
  app.post("/a2a/bots/:name", async (c) => {
    const bot = deps.profiles.messaging.bot(c.req.param("name"));
    const body: unknown = await c.req.json().catch(() => null);
    const id = body && typeof body === "object" && "id" in body ? (body as { id: unknown }).id : null;
    if (!bot) return c.json({ jsonrpc: "2.0", id, error: { code: -32001, message: `No bot named "${c.req.param("name")}" on this gateway` } }, 404);
    const sdk = await import("@a2a-js/sdk/server");
    let handler = handlers.get(bot.name);
    if (!handler) {
      handler = Promise.resolve(new sdk.JsonRpcTransportHandler(new sdk.DefaultRequestHandler(agentCard(origin(c), bot.name, bot.description, deps.version), new sdk.InMemoryTaskStore(), executor(deps, bot.name))));
      handlers.set(bot.name, handler);
    }
    const caller = c.get("caller");
    const answer = await (await handler).handle(body, new sdk.ServerCallContext(undefined, principalUser(caller)));
    if (Symbol.asyncIterator in (answer as object)) {
      // The card says streaming: false; a client that streams anyway is told so.
      return c.json({ jsonrpc: "2.0", id, error: { code: -32004, message: "Streaming is not supported by this agent" } });
    }
    return c.json(answer as object);
  });
}

function origin(c: Context<AppEnv>): string {
  const url = new URL(c.req.url);
  return `${url.protocol}//${c.req.header("host") ?? url.host}`;
}

/** The bot's Agent Card (A2A 0.3): one skill, text in and out, no streaming, the gateway's bearer key. */
export function agentCard(base: string, name: string, description: string, version: string): AgentCard {
  const url = `${base}/a2a/bots/${encodeURIComponent(name)}`;
  return {
    name,
    description: description || `The Tether bot ${name}`,
    protocolVersion: "0.3.0",
    version,
    url,
    preferredTransport: "JSONRPC",
    capabilities: { streaming: false, pushNotifications: false },
    defaultInputModes: ["text"],
    defaultOutputModes: ["text"],
    skills: [{ id: "chat", name, description: description || `Talk to ${name}`, tags: ["chat"] }],
    securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
    security: [{ bearer: [] }],
  };
}

/** The request's principal as the SDK's user (the executor reads it back). */
function principalUser(caller: Caller): { readonly isAuthenticated: boolean; readonly userName: string } {
  return { isAuthenticated: true, userName: caller.principal };
}

/** Asks the bot and publishes a completed task whose status message and artifact carry the answer. */
function executor(deps: A2ADeps, botName: string): AgentExecutor {
  return {
    async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
      const message = ctx.userMessage;
      const text = message.parts.flatMap((p) => (p.kind === "text" ? [p.text] : [])).join("\n");
      const from = typeof message.metadata?.from === "string" ? message.metadata.from : "an A2A client";
      const principal = ctx.context?.user?.userName ?? "default";
      let answer: { ok: boolean; text: string };
      try {
        answer = await deps.profiles.messaging.answer({ principal }, botName, from, text || "(empty message)", message.messageId);
      } catch (err) {
        deps.logger.warn({ err, bot: botName }, "an A2A message could not be answered");
        answer = { ok: false, text: err instanceof Error ? err.message : String(err) };
      }
      const reply: Message = {
        kind: "message",
        messageId: `${message.messageId}:reply`,
        role: "agent",
        parts: [{ kind: "text", text: answer.text }],
        taskId: ctx.taskId,
        contextId: ctx.contextId,
      };
      const task: Task = {
        kind: "task",
        id: ctx.taskId,
        contextId: ctx.contextId,
        status: { state: answer.ok ? "completed" : "failed", message: reply, timestamp: new Date().toISOString() },
        history: [message],
        artifacts: [{ artifactId: "reply", parts: [{ kind: "text", text: answer.text }] }],
      };
      bus.publish(task);
      bus.finished();
    },
    cancelTask: async () => undefined,
  };
}
