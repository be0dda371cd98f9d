/**
 * What every HTTP handler gets: the node bindings, the authenticated caller, the profile the
 * request addresses (resolved once per request, by `resolveProfile`), and shared deps.
 */
import type { HttpBindings } from "@hono/node-server";
import type { Context, MiddlewareHandler } from "hono";
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import type { HttpConfig } from "../../config/index.js";
import { DEFAULT_PROFILE, type Caller, type HttpRecords, type Profile, type ProfileRegistry } from "../../sessions/index.js";
import { assertProfileAllowed, type Authenticator, type Principal } from "../auth.js";
import type { FlowLimits } from "../viewer-flow.js";
import type { RequestGuard } from "../request-guard.js";
import type { PromMetrics } from "./metrics.js";

export interface ModelInfo {
  /** The id clients send as `model`. */
  id: string;
  /** The provider that serves it (`demo`, `openai`). */
  provider: string;
  /** Listed in config `models.require_confirmation`: switching to it asks first. */
  requires_confirmation?: boolean;
  /** The model's context window in tokens (provider `context_length`, else compression's default). */
  context_length?: number;
  /** A session on it compresses when its context reaches this many tokens (compression enabled). */
  compress_at_tokens?: number;
}

export interface HttpApiDeps {
  /** Every profile's sessions and HTTP records: the only way the HTTP API reaches them. */
  profiles: ProfileRegistry;
  auth: Authenticator;
  /** Host and Origin checks of every route (request-guard.ts), shared with the WebSocket upgrade. */
  guard: RequestGuard;
  logger: Logger;
  clock: Clock;
  ids: IdGenerator;
  config: HttpConfig;
  /** `limits.max_json_depth`: a body nested deeper answers 400 `json_too_deep`. @default 64 */
  maxJsonDepth?: number;
  models: ModelInfo[];
  metrics: PromMetrics | null;
  /** Send-buffer limits of a viewer, the same for SSE as for WebSocket (default DEFAULT_FLOW_LIMITS). */
  flow?: FlowLimits;
  /** True when the store answers and migrations ran. */
  ready: () => Promise<boolean>;
  /** True while a graceful stop drains the node: `/readyz` says `draining`. */
  draining?: () => boolean;
  /** The gateway's version (Agent Cards). */
  version?: string;
}

/**
 * The profile a request addresses: `X-Tether-Profile`, else `?profile=`, else `fallback` (the
 * body's, on create), else `default`. Resolved on first use and kept for the rest of the request.
 */
export type ProfileOfRequest = (fallback?: string) => Promise<Profile>;

export interface AppEnv {
  Bindings: HttpBindings;
  Variables: { caller: Caller; principal: Principal; profile: ProfileOfRequest; maxJsonDepth: number };
}

export type AppContext = Context<AppEnv>;

/** Deps plus the per-app state handlers share. */
export interface HttpApi extends HttpApiDeps {
  /** `deps.flow`, or DEFAULT_FLOW_LIMITS: every stream reads its limits here. */
  flow: FlowLimits;
}

export function callerOf(c: AppContext): Caller {
  return c.get("caller");
}

/** The header naming the profile a request addresses (the sessions API and the OpenAI endpoints). */
export const PROFILE_HEADER = "x-tether-profile";

/**
 * The middleware that resolves a request's profile once: the handler asks `profileOf(c)` where it
 * needs the profile (so an invalid body still answers before an unknown profile does), and every
 * later ask gets the same one. An unknown profile is 400 `invalid_params` (`param: "profile"`), a
 * store that cannot be opened 503 `storage_unavailable`: never another profile. A profile the key
 * was not given is 403 `profile_not_allowed`, before its store is opened.
 */
export function resolveProfile(profiles: ProfileRegistry): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const named = c.req.header(PROFILE_HEADER) || c.req.query("profile") || undefined;
    let resolved: { name: string; profile: Promise<Profile> } | undefined;
    c.set("profile", (fallback) => {
      const name = named ?? fallback ?? DEFAULT_PROFILE;
      if (resolved?.name !== name) {
        const principal = c.get("principal");
        let profile: Promise<Profile>;
        try {
          if (principal) assertProfileAllowed(principal, name);
          profile = profiles.profile(name);
        } catch (err) {
          profile = Promise.reject(err);
        }
        resolved = { name, profile };
      }
      return resolved.profile;
    });
    await next();
  };
}

/** The profile the request addresses (see `resolveProfile`). */
export function profileOf(c: AppContext, fallback?: string): Promise<Profile> {
  return c.get("profile")(fallback);
}

/**
 * Where `Idempotency-Key` records live: a key belongs to the principal whichever profile the
 * request addresses (as the turn limit counts every profile), so its records are the default
 * profile's. (A replay then answers from the profile the first request was made in.)
 */
export function idempotencyRecords(api: HttpApiDeps): HttpRecords {
  return api.profiles.defaultProfile.records;
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
