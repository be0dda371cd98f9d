/**
 * agent/ — the turn runner (the agent loop), providers and tools. It knows nothing of sockets:
 * everything it does is emitted as frames through a SessionEventLog.
 *
 *   const outcome = await runTurn({ …, provider: new DemoProvider({ clock }), tools: createDefaultTools() });
 */
export * from "./provider.js";
export { OpenAIProvider, type OpenAIProviderOptions } from "./openai-provider.js";
export { DemoProvider, DEMO_MODEL, type DemoProviderOptions } from "./demo-provider.js";
export { RETRYABLE_CODES } from "./error-classifier.js";
export { continueTurn, runTurn, type ContinueOptions } from "./turn-runner.js";
export type { PendingCall, PendingDecision, TurnRequests } from "./turn-requests.js";
export { DEFAULT_MAX_ITERATIONS, type TurnContext, type TurnOutcome, type TurnOutcomeStatus } from "./turn-context.js";
export * from "./tools/index.js";
