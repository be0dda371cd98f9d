/** What every HTTP handler gets: the node bindings, the authenticated caller, and shared deps. */
import type { HttpBindings } from "@hono/node-server";
import type { Context } from "hono";
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import type { HttpConfig } from "../../config/index.js";
import type { Caller, ProfileRegistry, SessionManager } from "../../sessions/index.js";
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
  /** The default profile's sessions (OpenAI endpoints, idempotency records). */
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
}

export function callerOf(c: AppContext): Caller {
  return c.get("caller");
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
