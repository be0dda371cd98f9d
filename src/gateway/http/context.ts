/** What every HTTP handler gets: the node bindings, the authenticated caller, and shared deps. */
import type { HttpBindings } from "@hono/node-server";
import type { Context } from "hono";
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import type { HttpConfig } from "../../config/index.js";
import { ErrorCode, TetherError } from "../../protocol/index.js";
import { DEFAULT_PROFILE, type Caller, type ProfileRegistry, type SessionManager } from "../../sessions/index.js";
import type { Authenticator } from "../auth.js";
import type { FlowLimits } from "../viewer-flow.js";
import type { PromMetrics } from "./metrics.js";
import type { TurnLimiter } from "./limits.js";

export interface ModelInfo {
  /** The id clients send as `model`. */
  id: string;
  /** The provider that serves it (`demo`, `openai`). */
  provider: string;
}

export interface HttpApiDeps {
  /** The default profile's sessions (and the idempotency records of every profile). */
  manager: SessionManager;
  /** Every profile's sessions, for routes that may name a profile. */
  profiles?: ProfileRegistry;
  auth: Authenticator;
  logger: Logger;
  clock: Clock;
  ids: IdGenerator;
  config: HttpConfig;
  models: ModelInfo[];
  metrics: PromMetrics | null;
  /** Send-buffer limits of a viewer, the same for SSE as for WebSocket (default DEFAULT_FLOW_LIMITS). */
  flow?: FlowLimits;
  /** True when the store answers and migrations ran. */
  ready: () => Promise<boolean>;
}

export interface AppEnv {
  Bindings: HttpBindings;
  Variables: { caller: Caller };
}

export type AppContext = Context<AppEnv>;

/** Deps plus the per-app state handlers share. */
export interface HttpApi extends HttpApiDeps {
  limiter: TurnLimiter;
  /** `deps.flow`, or DEFAULT_FLOW_LIMITS: every stream reads its limits here. */
  flow: FlowLimits;
}

export function callerOf(c: AppContext): Caller {
  return c.get("caller");
}

/** The header naming the profile a request addresses (the sessions API and the OpenAI endpoints). */
export const PROFILE_HEADER = "x-tether-profile";

/** The profile a request names: `X-Tether-Profile`, else `?profile=`, else `fallback` (a body's); default `default`. */
export function profileOf(c: AppContext, fallback?: string): string {
  return c.req.header(PROFILE_HEADER) || c.req.query("profile") || fallback || DEFAULT_PROFILE;
}

/**
 * The SessionManager of a profile (each has its own store), opening it on first use. An unknown
 * profile throws 400 `invalid_params` (`param: "profile"`), a store that cannot be opened 503
 * `storage_unavailable`: never another profile's manager.
 */
export function managerOf(api: HttpApiDeps, profile: string): Promise<SessionManager> {
  if (api.profiles) return api.profiles.manager(profile);
  if (profile === DEFAULT_PROFILE) return Promise.resolve(api.manager);
  return Promise.reject(
    new TetherError(ErrorCode.InvalidParams, `Invalid params: unknown profile "${profile}"`, {
      issues: [{ path: "profile", message: `not one of: ${DEFAULT_PROFILE}` }],
    }),
  );
}

/** The SessionManager of the profile the request names (see `profileOf`, `managerOf`). */
export function sessionsOf(c: AppContext, api: HttpApiDeps, fallback?: string): Promise<SessionManager> {
  return managerOf(api, profileOf(c, fallback));
}

/**
 * Aborts when the client goes away before the handler said it is done (`finish`): the node
 * response closed without having been ended by us.
 */
export function clientGone(c: AppContext): { signal: AbortSignal; finish(): void } {
  const abort = new AbortController();
  let finished = false;
  const outgoing = c.env.outgoing;
  const onClose = () => {
    if (!finished) abort.abort(new Error("client disconnected"));
  };
  outgoing.once("close", onClose);
  return {
    signal: abort.signal,
    finish() {
      finished = true;
      outgoing.off("close", onClose);
    },
  };
}
