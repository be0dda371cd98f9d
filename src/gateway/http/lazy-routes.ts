/**
 * Routes whose module is imported by the first request to one of them. The OpenAI-compatible
 * endpoints, the runs and sessions APIs, the AI SDK chat and A2A are ~150 KB of code and ~300 zod
 * schemas built on load: a gateway that only ever serves the WebSocket (or only one of them) need
 * not compile and build the rest before it listens (`npm run bench -- --only=startup`).
 *
 * The app registers the module's routes by their method and path, in the module's order, with a
 * stand-in handler; the first call imports the module, lets its `mount` function register its
 * handlers on a recorder and then calls the one of this route — with the request's own context, so
 * the app's middleware (auth, profile, limits), its params and its error handler all apply as if
 * the module had been mounted directly. The declared list and what the module registers must be
 * the same (checked when it loads, and by test/unit/lazy-routes.test.ts for every module).
 *
 *   mountLazily(app, CHAT_ROUTES, async () => {
 *     const { mountChat } = await import("./openai-chat.js");
 *     return (routes) => mountChat(routes, api);
 *   });
 */
import type { Context, Hono } from "hono";
import type { AppEnv } from "./context.js";

export type RouteMethod = "get" | "post" | "patch" | "delete";
/** A route's method and path, as the module registers it. */
export type RouteList = ReadonlyArray<readonly [RouteMethod, string]>;
/** A route's handler; its context knows the path's params (`:id`), as hono's own does. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a stored handler's path is any path
export type RouteHandler<P extends string = any> = (c: Context<AppEnv, P>) => Response | Promise<Response>;

/** What a lazily mounted module registers its routes on (the recorder). */
export interface Routes {
  get<P extends string>(path: P, handler: RouteHandler<P>): void;
  post<P extends string>(path: P, handler: RouteHandler<P>): void;
  patch<P extends string>(path: P, handler: RouteHandler<P>): void;
  delete<P extends string>(path: P, handler: RouteHandler<P>): void;
}

/** A module's mount function, given where to register. */
export type Mount = (routes: Routes) => void;

/** Records what a mount function registers, in order. */
export class RouteRecorder implements Routes {
  readonly routes: Array<[RouteMethod, string]> = [];
  readonly handlers = new Map<string, RouteHandler>();

  get<P extends string>(path: P, handler: RouteHandler<P>): void {
    this.add("get", path, handler);
  }
  post<P extends string>(path: P, handler: RouteHandler<P>): void {
    this.add("post", path, handler);
  }
  patch<P extends string>(path: P, handler: RouteHandler<P>): void {
    this.add("patch", path, handler);
  }
  delete<P extends string>(path: P, handler: RouteHandler<P>): void {
    this.add("delete", path, handler);
  }

  private add(method: RouteMethod, path: string, handler: RouteHandler): void {
    this.routes.push([method, path]);
    this.handlers.set(`${method} ${path}`, handler);
  }
}

/** The routes `mount` registers (for the check, and the test that keeps the lists true). */
export function recordRoutes(mount: Mount): RouteRecorder {
  const recorder = new RouteRecorder();
  mount(recorder);
  return recorder;
}

/** Registers `routes` on `app`; the module behind them is loaded by the first request to one. */
export function mountLazily(app: Hono<AppEnv>, routes: RouteList, load: () => Promise<Mount>): void {
  let loaded: Promise<Map<string, RouteHandler>> | undefined;
  const handlers = () =>
    (loaded ??= load().then((mount) => {
      const recorder = recordRoutes(mount);
      const declared = routes.map(([m, p]) => `${m} ${p}`).join(", ");
      const actual = recorder.routes.map(([m, p]) => `${m} ${p}`).join(", ");
      if (declared !== actual) throw new Error(`lazily mounted routes differ from the module's: declared [${declared}], registered [${actual}]`);
      return recorder.handlers;
    }));
  for (const [method, path] of routes) {
    const key = `${method} ${path}`;
    app[method](path, async (c) => (await handlers()).get(key)!(c));
  }
}
