/**
 * Every bot of this gateway as an A2A agent, through the official SDK (`@a2a-js/sdk`): its Agent
 * Card at `GET /a2a/bots/{name}/.well-known/agent-card.json` (public: name, description, the
 * endpoint and that it wants a bearer key), and its JSON-RPC endpoint at `POST /a2a/bots/{name}`
 * (behind the gateway's auth; the caller's key is the task's principal — a peer's own key, with
 * scope `a2a` and the profiles of the bots it may message, or a key of the session plane). The SDK's
 * `DefaultRequestHandler` and `JsonRpcTransportHandler` speak the protocol. Tasks live in the
 * store (`Messaging.tasks`, scoped to the principal: another's task answers "Task not found" like
 * an unknown id); the executor publishes the task `working` first — so `blocking: false` answers
 * at once — then asks the bot and publishes how it ended.
 *
 * HTTP-level failures (no such bot, a body that is not JSON or too large — the house body reader
 * and its limit —, a message over `messaging.max_message_bytes`) take the house error path
 * (errors.ts); JSON-RPC-level ones are the SDK's own `A2AError`s, the streaming methods included
 * (the card says `streaming: false`, and the SDK's handler refuses them by that: -32004). Times
 * are the gateway's Clock (a2a-tasks.ts). The SDK is imported on the first A2A request, never at start.
 */
import type { Context } from "hono";
import type { Routes } from "./lazy-routes.js";
import * as z from "zod";
import type { AgentCard, Task } from "@a2a-js/sdk";
import type { AgentExecutor, ExecutionEventBus, RequestContext, ServerCallContext, TaskStore } from "@a2a-js/sdk/server";
import { ErrorCode, TetherError } from "../../protocol/index.js";
import type { Caller, ProfileRegistry } from "../../sessions/index.js";
import type { Logger } from "../../lib/logger.js";
import { assertProfileAllowed } from "../auth.js";
import type { AppEnv } from "./context.js";
import { HttpError } from "./errors.js";
import { readJson } from "./json-body.js";

type Sdk = typeof import("@a2a-js/sdk/server");
type Handler = InstanceType<Sdk["JsonRpcTransportHandler"]>;
type Bot = { name: string; profile: string; description: string };

export interface A2ADeps {
  profiles: ProfileRegistry;
  logger: Logger;
  version: string;
}

/** A JSON-RPC request as far as this route reads it; the SDK checks the rest. */
const RpcRequest = z.looseObject({ method: z.unknown().optional(), id: z.unknown().optional(), params: z.unknown().optional() });

/** The public routes (Agent Cards): mounted before auth. */
export function mountA2ACards(app: Routes, deps: A2ADeps): void {
  app.get("/a2a/bots/:name/.well-known/agent-card.json", (c) => c.json(agentCard(origin(c), requireBot(deps, c.req.param("name")), deps.version)));
}

/** The JSON-RPC endpoints: mounted after auth. */
export function mountA2A(app: Routes, deps: A2ADeps): void {
  const handlers = new Map<string, Promise<Handler>>();
  app.post("/a2a/bots/:name", async (c) => {
    const bot = requireBot(deps, c.req.param("name"));
    // A key given some profiles (a peer's: `scopes: [a2a], profiles: [helper]`) messages those bots only.
    assertProfileAllowed(c.get("principal"), bot.profile);
    const body = await readJson(c, RpcRequest);
    const bytes = checkMessageSize(body, deps.profiles.messaging.maxMessageBytes());
    // A message is admitted here, by the principal's turn quotas (429 too_many_turns): once the SDK
    // has its task, the turn that answers it is durable work the quotas count but never refuse.
    if (body.method === "message/send" && bytes > 0) (await deps.profiles.profile(bot.profile)).sessions.assertTurnRoom(c.get("caller"), bytes);
    const sdk = await import("@a2a-js/sdk/server");
    let handler = handlers.get(bot.profile);
    if (!handler) {
      const card = agentCard(origin(c), bot, deps.version);
      handler = Promise.resolve(new sdk.JsonRpcTransportHandler(new sdk.DefaultRequestHandler(card, taskStore(deps, bot), executor(deps, bot))));
      handlers.set(bot.profile, handler);
    }
    const answer = await (await handler).handle(body, new sdk.ServerCallContext(undefined, principalUser(c.get("caller"))));
    return c.json(answer as object);
  });
}

/** The bot `name` of this gateway, or the house 404 (`unknown_bot`). */
function requireBot(deps: A2ADeps, name: string): Bot {
  const bot = deps.profiles.messaging.bot(name);
  if (!bot) throw new TetherError(ErrorCode.UnknownBot, `No bot named "${name}" on this gateway`, { path: "name" });
  return bot;
}

/**
 * A message over the limit is refused before the SDK sees it (413, naming the limit): it would be
 * stored with its task and sent to the model whole. Answers its size (0: no message).
 */
function checkMessageSize(body: z.infer<typeof RpcRequest>, limit: number): number {
  const message = (body.params as { message?: unknown } | undefined)?.message;
  if (message === undefined) return 0;
  const bytes = Buffer.byteLength(JSON.stringify(message));
  if (bytes > limit) {
    throw new HttpError(413, "message_too_large", `The A2A message is ${bytes} bytes, over the limit of ${limit} (config messaging.max_message_bytes)`, "params.message");
  }
  return bytes;
}

function origin(c: Context<AppEnv>): string {
  const url = new URL(c.req.url);
  return `${url.protocol}//${c.req.header("host") ?? url.host}`;
}

/** The bot's Agent Card (A2A 0.3): one skill, text in and out, no streaming, a bearer key. */
export function agentCard(base: string, bot: Pick<Bot, "name" | "description">, version: string): AgentCard {
  const { name, description } = bot;
  return {
    name,
    description: description || `The Tether bot ${name}`,
    protocolVersion: "0.3.0",
    version,
    url: `${base}/a2a/bots/${encodeURIComponent(name)}`,
    preferredTransport: "JSONRPC",
    capabilities: { streaming: false, pushNotifications: false },
    defaultInputModes: ["text"],
    defaultOutputModes: ["text"],
    skills: [{ id: "chat", name, description: description || `Talk to ${name}`, tags: ["chat"] }],
    securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
    security: [{ bearer: [] }],
  };
}

/** The request's principal as the SDK's user (the task store and the executor read it back). */
function principalUser(caller: Caller): { readonly isAuthenticated: boolean; readonly userName: string } {
  return { isAuthenticated: true, userName: caller.principal };
}

function principalOf(context: ServerCallContext | undefined): string {
  const name = context?.user?.userName;
  // Every request is authenticated before the SDK sees it: no principal is a bug, never "anyone".
  if (!name) throw new Error("an A2A request reached the SDK without a principal");
  return name;
}

/** The SDK's task store over the durable, principal-scoped one. */
function taskStore(deps: A2ADeps, bot: Bot): TaskStore {
  const tasks = deps.profiles.messaging.tasks;
  return {
    save: (task: Task, context?: ServerCallContext) => tasks.save(principalOf(context), bot.profile, task),
    load: (taskId: string, context?: ServerCallContext) => tasks.load(principalOf(context), bot.profile, taskId),
  };
}

/**
 * Publishes the task `working` (what a non-blocking send answers at once), asks the bot, and
 * publishes how the task ended. When it cannot be answered now (the store is away, the gateway is
 * stopping) the task stays `working` in the store and the recovery sweep finishes it.
 */
function executor(deps: A2ADeps, bot: Bot): AgentExecutor {
  const tasks = deps.profiles.messaging.tasks;
  return {
    async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
      const principal = principalOf(ctx.context);
      const working = tasks.working(ctx.taskId, ctx.contextId, ctx.userMessage, ctx.task);
      bus.publish(working);
      const ended = await tasks.run(principal, bot.profile, working);
      if (ended) bus.publish(ended);
      bus.finished();
    },
    async cancelTask(taskId: string): Promise<void> {
      // The SDK loaded the task with the caller's principal first: another's never gets here.
      if (!(await tasks.cancel(taskId))) deps.logger.warn({ task_id: taskId }, "tasks/cancel of a task not answered in this process");
    },
  };
}
