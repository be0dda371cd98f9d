/**
 * The page's transcript model: the SDK's (src/client/view). The reducer over typed frames and the
 * blocks it builds live there, shared with `tether chat` and the React hook; this file only keeps
 * the names the page's views import.
 */
export {
  applyFrame,
  applyMessageSnapshot,
  applyTodo,
  delegationCard,
  fromSnapshot,
  isDelegationResult,
  resultMetadata,
  settlePending,
  type Block,
  type DelegationResultMetadata,
  type DelegationTaskView,
  type PendingPrompt,
  type SessionModel,
  type TurnErrorInfo,
} from "../../src/client/view/index.js";
