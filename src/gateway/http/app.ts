/**
 * The HTTP API as one hono app: health, metrics, the OpenAI-compatible endpoints and the sessions
 * API, behind the Host and Origin checks, bearer auth and a body limit, with one error handler rendering every failure
 * in the OpenAI error envelope. `createGatewayHttpServer` serves it with @hono/node-server on a
 * node:http server, to which the WebSocket endpoint attaches its `upgrade` handler.
 *
 *   const server = createGatewayHttpServer(deps);   // then attachWsEndpoint(server, …); server.listen(…)
 */
import { createAdaptorServer } from "@hono/node-server";
import type { Server, ServerOptions } from "node:http";
import { Hono, type MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import { routePath } from "hono/route";
import { resolveProfile, type AppContext, type AppEnv, type HttpApi, type HttpApiDeps } from "./context.js";
import { authenticate } from "./access.js";
import { originGuard } from "./cors.js";
import { closeAfterEarlyAnswer } from "./early-close.js";
import { accessLog } from "./access-log.js";
import { errorType, HttpErrors, INTERNAL_ERROR, renderError } from "./errors.js";
import { DEFAULT_FLOW_LIMITS } from "../viewer-flow.js";
import { DEFAULT_MAX_JSON_DEPTH } from "../../protocol/index.js";
import { mountModels } from "./models.js";
import { mountWebClient } from "./web-client.js";
import { mountLazily } from "./lazy-routes.js";
import { A2A_CARD_ROUTES, A2A_ROUTES, AI_SDK_ROUTES, CHAT_ROUTES, RESPONSES_ROUTES, RUNS_ROUTES, SESSIONS_ROUTES } from "./api-routes.js";

export function createHttpApp(deps: HttpApiDeps): Hono<AppEnv> {
  // Quotas per principal (turns, sessions) are the sessions layer's, on every transport alike.
  const api: HttpApi = {
    ...deps,
    flow: deps.flow ?? DEFAULT_FLOW_LIMITS,
  };
  const app = new Hono<AppEnv>();

  app.onError((err, c) => {
    const rendered = renderError(err);
    if (rendered) return c.json(rendered.body, rendered.status as 400, rendered.headers);
    if (err instanceof HTTPException && err.status < 500) {
      const status = err.status;
      return c.json({ error: { message: err.message, type: errorType(status), param: null, code: "bad_request" } }, status);
    }
    deps.logger.error({ err, method: c.req.method, path: c.req.path }, "internal error in http handler");
    return c.json(INTERNAL_ERROR, 500);
  });
  app.notFound((c) => {
    const e = renderError(HttpErrors.notFound(`No route for ${c.req.method} ${c.req.path}`))!;
    return c.json(e.body, 404);
  });

  // First, so it sees every answer (errors included) as it leaves.
  app.use("*", closeAfterEarlyAnswer());
  // Every request, refused ones too: one line when its response has ended.
  app.use("*", accessLog(deps.logger));
  // Host and Origin before anything else answers: health, the page, auth, bodies (request-guard.ts).
  app.use("*", originGuard(deps.guard));
  // Every body reader (json-body.ts) refuses a body nested deeper than this before parsing it.
  const maxJsonDepth = deps.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH;
  app.use("*", async (c, next) => {
    c.set("maxJsonDepth", maxJsonDepth);
    await next();
  });

  if (deps.metrics) {
    const metrics = deps.metrics;
    app.use("*", async (c, next) => {
      // Health probes are not API traffic: a balancer's checks every few seconds would swamp the
      // histogram of a quiet gateway (and load prom-client into one nobody uses).
      if (c.req.path === "/healthz" || c.req.path === "/readyz") return next();
      // EventSource sends Last-Event-ID when it comes back: a reconnect that catches up.
      if (c.req.method === "GET" && c.req.header("last-event-id")) metrics.reconnected("sse");
      const started = performance.now();
      await next();
      let route = "unmatched";
      try {
        route = routePath(c, -1);
      } catch {
        // no route matched
      }
      metrics.requestSeconds.observe({ method: c.req.method, route, status: String(c.res.status) }, (performance.now() - started) / 1000);
    });
  }

  app.get("/healthz", (c) => c.json({ status: "ok" }));
  app.get("/readyz", async (c) => {
    const ok = await deps.ready().catch(() => false);
    return c.json({ status: readiness(ok, deps.draining) }, ok ? 200 : 503);
  });
  // The web client (web/dist) at `/`: static, before auth (the key is typed into the page).
  mountWebClient(app);
  // Agent Cards are public, as A2A discovery expects; the JSON-RPC endpoints are behind auth.
  const a2a = { profiles: deps.profiles, logger: deps.logger, version: deps.version ?? "0.0.0" };
  const a2aModule = () => import("./a2a.js");
  mountLazily(app, A2A_CARD_ROUTES, async () => {
    const { mountA2ACards } = await a2aModule();
    return (routes) => mountA2ACards(routes, a2a);
  });

  app.use("*", authenticate(deps.auth));
  app.use("*", limitBody(deps.config.max_body_bytes));

  // The OpenAI-compatible endpoints and the sessions API address a profile.
  app.use("/v1/*", resolveProfile(deps.profiles));
  app.use("/api/*", resolveProfile(deps.profiles));

  if (deps.metrics) {
    const metrics = deps.metrics;
    app.get("/metrics", async (c) => {
      const { contentType, body } = await metrics.render();
      return c.body(body, 200, { "content-type": contentType });
    });
  }
  mountModels(app, api);
  // Each API's module (its code and its body schemas) is loaded by its first request (lazy-routes.ts).
  mountLazily(app, CHAT_ROUTES, async () => {
    const { mountChat } = await import("./openai-chat.js");
    return (routes) => mountChat(routes, api);
  });
  mountLazily(app, RESPONSES_ROUTES, async () => {
    const { ResponsesApi } = await import("./openai-responses.js");
    return (routes) => new ResponsesApi(api).mount(routes);
  });
  mountLazily(app, RUNS_ROUTES, async () => {
    const { RunsApi } = await import("./runs-api.js");
    return (routes) => new RunsApi(api).mount(routes);
  });
  mountLazily(app, SESSIONS_ROUTES, async () => {
    const { mountSessions } = await import("./sessions-api.js");
    return (routes) => mountSessions(routes, api);
  });
  mountLazily(app, AI_SDK_ROUTES, async () => {
    const { mountAiSdkChat } = await import("../ui/ai-sdk-chat.js");
    return (routes) => mountAiSdkChat(routes, api);
  });
  mountAgUi(app, api);
  mountLazily(app, A2A_ROUTES, async () => {
    const { mountA2A } = await a2aModule();
    return (routes) => mountA2A(routes, a2a);
  });
  return app;
}

/** `/readyz`'s word: `ready`, `draining` (a graceful stop has begun) or `unavailable` (the store). */
export function readiness(ok: boolean, draining: (() => boolean) | undefined): "ready" | "draining" | "unavailable" {
  return ok ? "ready" : draining?.() ? "draining" : "unavailable";
}

/**
 * AG-UI (`POST /ag-ui`, `/ag-ui/{profile}`): its module, and with it `@ag-ui/core` and its encoder,
 * is loaded by the first run — a gateway no AG-UI client talks to never pays for it.
 */
function mountAgUi(app: Hono<AppEnv>, api: HttpApi): void {
  const run = async (c: AppContext) => (await import("../ui/ag-ui-run.js")).runAgUi(c, api);
  app.use("/ag-ui", resolveProfile(api.profiles));
  app.use("/ag-ui/*", resolveProfile(api.profiles));
  app.post("/ag-ui", run);
  app.post("/ag-ui/:profile", run);
}

export function createGatewayHttpServer(deps: HttpApiDeps, serverOptions: ServerOptions = {}): Server {
  return serveHttpApp(createHttpApp(deps), serverOptions);
}

/**
 * Bodies over `max` bytes answer 413. A body with a declared length is judged by its header (Node's
 * parser never reads past it), so the body itself stays untouched until a route reads it — hono's
 * bodyLimit reads `c.req.raw.body`, which makes the adapter build a full web Request and stream
 * around the socket (~0.1 ms of every chat completion), where a route's `c.req.text()` reads the
 * bytes directly. A streamed (chunked) body is counted as it arrives, by hono's bodyLimit.
 */
function limitBody(max: number): MiddlewareHandler<AppEnv> {
  const streamed = bodyLimit({
    maxSize: max,
    onError: () => {
      throw HttpErrors.payloadTooLarge(max);
    },
  });
  return async (c, next) => {
    const headers = c.env.incoming?.headers;
    if (headers && headers["content-length"] !== undefined && headers["transfer-encoding"] === undefined) {
      if (Number(headers["content-length"]) > max) throw HttpErrors.payloadTooLarge(max);
      return next();
    }
    return streamed(c, next);
  };
}

/** A node:http server answering every request with `app` (the WebSocket endpoint attaches to it). */
export function serveHttpApp(app: Hono<AppEnv>, serverOptions: ServerOptions = {}): Server {
  // overrideGlobalObjects (the adapter's default) swaps in its lightweight Request/Response; with
  // the originals, hono's bodyLimit cannot re-wrap a streamed (chunked) request body.
  return createAdaptorServer({ fetch: app.fetch, overrideGlobalObjects: true, serverOptions }) as Server;
}
