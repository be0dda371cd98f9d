/**
 * react/ — the React binding of the SDK (package tether-gateway-react): `useSession`. Imports
 * client/ and protocol/ (and `react`, a peer dependency); nothing of the gateway.
 */
export { useSession, type UseSession } from "./use-session.js";
export { SessionView, type SessionViewOptions, type SessionViewSnapshot, type Block, type SessionModel } from "../client/index.js";
