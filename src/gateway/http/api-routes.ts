/**
 * The routes of the HTTP APIs whose modules are loaded by their first request (lazy-routes.ts),
 * each list in the order its module registers them. A route added to a module is added here too:
 * the module's load fails otherwise, and test/unit/lazy-routes.test.ts says which.
 */
import type { RouteList } from "./lazy-routes.js";

/** openai-chat.ts `mountChat`. */
export const CHAT_ROUTES: RouteList = [["post", "/v1/chat/completions"]];

/** openai-responses.ts `ResponsesApi.mount`. */
export const RESPONSES_ROUTES: RouteList = [
  ["post", "/v1/responses"],
  ["get", "/v1/responses/:id"],
  ["post", "/v1/responses/:id/cancel"],
  ["delete", "/v1/responses/:id"],
];

/** runs-api.ts `RunsApi.mount`. */
export const RUNS_ROUTES: RouteList = [
  ["post", "/v1/runs"],
  ["get", "/v1/runs/:id"],
  ["get", "/v1/runs/:id/events"],
  ["post", "/v1/runs/:id/stop"],
  ["post", "/v1/runs/:id/approval"],
  ["post", "/v1/runs/:id/steer"],
];

/** sessions-api.ts `mountSessions`. */
export const SESSIONS_ROUTES: RouteList = [
  ["get", "/api/sessions"],
  ["get", "/api/sessions/:id"],
  ["get", "/api/approvals"],
  ["get", "/api/sessions/:id/messages"],
  ["get", "/api/workspace/folders"],
  ["get", "/api/blobs/:sha256"],
  ["get", "/api/sessions/:id/export"],
  ["post", "/api/sessions"],
  ["patch", "/api/sessions/:id"],
  ["delete", "/api/sessions/:id"],
  ["post", "/api/sessions/:id/prompt"],
  ["post", "/api/sessions/:id/requests/:request_id"],
  ["delete", "/api/approvals/:tool"],
  ["post", "/api/sessions/:id/branch"],
  ["post", "/api/sessions/:id/interrupt"],
  ["patch", "/api/sessions/:id/turns/:turn_id"],
  ["get", "/api/sessions/:id/events"],
];

/** ui/ai-sdk-chat.ts `mountAiSdkChat`. */
export const AI_SDK_ROUTES: RouteList = [
  ["post", "/api/chat"],
  ["get", "/api/chat/:id/stream"],
];

/** a2a.ts `mountA2ACards` (public: before auth). */
export const A2A_CARD_ROUTES: RouteList = [["get", "/a2a/bots/:name/.well-known/agent-card.json"]];

/** a2a.ts `mountA2A`. */
export const A2A_ROUTES: RouteList = [["post", "/a2a/bots/:name"]];
