/**
 * client/view — app-level state: SessionView (one session as a UI shows it) and the transcript
 * reducer under it, pure functions over typed frames that any UI (the web page, `tether chat`,
 * the React hook) shares.
 */
export { SessionView, type SessionViewOptions, type SessionViewSnapshot } from "./session-view.js";
export type { SubmitOptions, SubmitRetry } from "./prompt-submit.js";
export { applyFrame, applyMessageSnapshot, applyTodo, settlePending } from "./transcript.js";
export { fromSnapshot } from "./transcript-seed.js";
export { delegationCard, isDelegationResult, resultMetadata } from "./delegation-cards.js";
export { PROCESS_TAIL_CHARS } from "./processes.js";
export type { Block, BlockOf, DelegationResultMetadata, DelegationTaskView, PendingPrompt, SessionModel, TurnErrorInfo } from "./transcript-types.js";
