/**
 * useSession: a Tether session in a React component, through the SDK's SessionView and React's
 * useSyncExternalStore — the transcript (blocks), pending prompts, todo, open requests,
 * processes, usage and the link's status, re-rendered on every change and consistent within a
 * render.
 *
 *   const session = useSession(client, sessionId);
 *   session.blocks.map((b) => …);  await session.submit("hello");
 */
import { useEffect, useState, useSyncExternalStore } from "react";
import { SessionView, type ProcessInfo, type SessionViewOptions, type SessionViewSnapshot, type SubmitOptions, type TetherClient } from "../client/index.js";

export interface UseSession extends SessionViewSnapshot {
  /** The SessionView under the hook (undefined until the client is given). */
  view: SessionView | undefined;
  /** Sends a prompt (optimistic, with the idempotent retry); false when it failed for good. */
  submit(text: string, opts?: SubmitOptions): Promise<boolean>;
  /** A new version of user message `userKey` (an edit with `text`, else the same prompt). */
  regenerate(userKey: string, text?: string): Promise<boolean>;
  /** Continue: the last reply goes on, with no user message (`prompt.submit { continue: true }`). */
  continueReply(): Promise<boolean>;
  /** New text for a queued prompt, in its place (`prompt.edit`). */
  editQueued(requestId: string, text: string): Promise<"edited" | "started" | "idle">;
  dismissPending(requestId: string): void;
  /** Stops a background process of the session (`process.kill`); rejects with the SDK's RpcError. */
  killProcess(id: string): Promise<ProcessInfo>;
}

const EMPTY: SessionViewSnapshot = {
  sessionId: undefined,
  model: undefined,
  blocks: [],
  pending: [],
  requests: [],
  todo: { revision: 0, items: [] },
  processes: [],
  running: false,
  state: undefined,
  usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  link: { state: "connecting", attempt: 0 },
  loading: false,
  error: undefined,
  version: 0,
};
const noSubscribe = () => () => undefined;
const emptySnapshot = () => EMPTY;

/**
 * Watches `sessionId` over `client` (a connected TetherClient; the hook does not close it). A new
 * `sessionId` switches the view to that session; `options` are read when the client changes.
 */
export function useSession(client: TetherClient | undefined, sessionId: string | undefined, options?: SessionViewOptions): UseSession {
  const [view, setView] = useState<SessionView>();
  useEffect(() => {
    if (!client) return undefined;
    const v = new SessionView(client, options);
    setView(v);
    return () => {
      v.dispose();
      setView(undefined);
    };
    // options: read once per client, as a ref would be (an inline object would re-create the view each render)
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [client]);
  useEffect(() => {
    if (view && sessionId) view.open(sessionId).catch(() => undefined); // the snapshot's `error` says why
  }, [view, sessionId]);
  const snap = useSyncExternalStore(view ? view.subscribe : noSubscribe, view ? view.getSnapshot : emptySnapshot, view ? view.getSnapshot : emptySnapshot);
  return {
    ...snap,
    view,
    submit: (text, opts) => (view ? view.submit(text, opts) : Promise.resolve(false)),
    regenerate: (key, text) => (view ? view.regenerate(key, text) : Promise.resolve(false)),
    continueReply: () => (view ? view.continueReply() : Promise.resolve(false)),
    editQueued: (id, text) => (view ? view.editQueued(id, text) : Promise.resolve("idle" as const)),
    dismissPending: (id) => view?.dismissPending(id),
    killProcess: (id) => (view ? view.killProcess(id) : Promise.reject(new Error("no session is open"))),
  };
}
