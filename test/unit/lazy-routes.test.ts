/**
 * The HTTP APIs whose modules a start does not load (src/gateway/http/lazy-routes.ts): the route
 * lists the app registers up front are the routes each module registers, in its order; and a lazily
 * mounted route runs inside the app as a directly mounted one would — after the app's middleware,
 * with its path params, its errors through the app's error handler — loading its module once.
 */
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { A2A_CARD_ROUTES, A2A_ROUTES, AI_SDK_ROUTES, CHAT_ROUTES, RESPONSES_ROUTES, RUNS_ROUTES, SESSIONS_ROUTES } from "../../src/gateway/http/api-routes.js";
import type { AppEnv, HttpApi } from "../../src/gateway/http/context.js";
import { mountLazily, recordRoutes, type Mount, type RouteList } from "../../src/gateway/http/lazy-routes.js";
import type { A2ADeps } from "../../src/gateway/http/a2a.js";

// Mounting only registers handlers; the one thing read at mount time is where idempotency records live.
const api = { profiles: { defaultProfile: { records: {} } } } as unknown as HttpApi;
const a2a = {} as A2ADeps;

describe("the lazily mounted APIs' route lists", () => {
  it.each([
    ["openai-chat", CHAT_ROUTES, async (): Promise<Mount> => { const m = await import("../../src/gateway/http/openai-chat.js"); return (r) => m.mountChat(r, api); }],
    ["openai-responses", RESPONSES_ROUTES, async (): Promise<Mount> => { const m = await import("../../src/gateway/http/openai-responses.js"); return (r) => new m.ResponsesApi(api).mount(r); }],
    ["runs-api", RUNS_ROUTES, async (): Promise<Mount> => { const m = await import("../../src/gateway/http/runs-api.js"); return (r) => new m.RunsApi(api).mount(r); }],
    ["sessions-api", SESSIONS_ROUTES, async (): Promise<Mount> => { const m = await import("../../src/gateway/http/sessions-api.js"); return (r) => m.mountSessions(r, api); }],
    ["ai-sdk-chat", AI_SDK_ROUTES, async (): Promise<Mount> => { const m = await import("../../src/gateway/ui/ai-sdk-chat.js"); return (r) => m.mountAiSdkChat(r, api); }],
    ["a2a cards", A2A_CARD_ROUTES, async (): Promise<Mount> => { const m = await import("../../src/gateway/http/a2a.js"); return (r) => m.mountA2ACards(r, a2a); }],
    ["a2a", A2A_ROUTES, async (): Promise<Mount> => { const m = await import("../../src/gateway/http/a2a.js"); return (r) => m.mountA2A(r, a2a); }],
  ] as Array<[string, RouteList, () => Promise<Mount>]>)("%s: the list is what the module registers", async (_name, list, load) => {
    expect(recordRoutes(await load()).routes).toEqual(list.map(([m, p]) => [m, p]));
  });
});

describe("mountLazily", () => {
  it("loads the module on the first request only, after the app's middleware, with the route's params and the app's error handler", async () => {
    let loads = 0;
    const app = new Hono<AppEnv>();
    app.onError((err, c) => c.json({ error: err.message }, 418));
    app.use("*", async (c, next) => {
      c.header("x-middleware", "ran");
      await next();
    });
    const mount: Mount = (routes) => {
      routes.get("/things/:id", (c) => c.json({ id: c.req.param("id") }));
      routes.post("/things/:id/fail", () => {
        throw new Error("handler failed");
      });
    };
    mountLazily(app, [["get", "/things/:id"], ["post", "/things/:id/fail"]], async () => {
      loads++;
      return mount;
    });
    expect(loads).toBe(0);
    const one = await app.request("/things/a1");
    expect(one.status).toBe(200);
    expect(one.headers.get("x-middleware")).toBe("ran");
    expect(await one.json()).toEqual({ id: "a1" });
    const failed = await app.request("/things/a2/fail", { method: "POST" });
    expect(failed.status).toBe(418);
    expect(await failed.json()).toEqual({ error: "handler failed" });
    expect((await app.request("/things/b2")).status).toBe(200);
    expect(loads).toBe(1);
    // A method or path the list does not declare is the app's 404, as before.
    expect((await app.request("/things/a1", { method: "DELETE" })).status).toBe(404);
  });

  it("refuses a module whose routes are not the declared ones, saying which", async () => {
    const app = new Hono<AppEnv>();
    app.onError((err, c) => c.json({ error: err.message }, 500));
    mountLazily(app, [["get", "/x"]], async () => (routes) => {
      routes.get("/x", (c) => c.text("x"));
      routes.post("/y", (c) => c.text("y"));
    });
    const res = await app.request("/x");
    expect(res.status).toBe(500);
    expect(((await res.json()) as { error: string }).error).toBe("lazily mounted routes differ from the module's: declared [get /x], registered [get /x, post /y]");
  });
});
