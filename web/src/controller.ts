/**
 * The page's state and every action, on top of the SDK (`src/client`): one TetherClient per tab,
 * one SessionView (the open session: its transcript, subscription, pending prompts and their
 * retry are the SDK's), the sessions list, the model list. Views read the controller and call
 * its methods; `subscribe` tells them when to re-render.
 */
import {
  ErrorCode,
  isFrameOf,
  Method,
  RpcError,
  SessionView,
  TetherClient,
  type ClientStatus,
  type Frame,
  type PartInput,
  type ProcessInfo,
  type SessionSummary,
} from "../../src/client/index.js";
import { isRecoverableEnd } from "../../src/protocol/end-reasons.js";
import type { WorkspaceFoldersResult } from "../../src/protocol/methods.js";
import { BROWSER_TOOLS, installBrowserTools } from "./browser-tools.js";
import type { SessionModel } from "./model.js";

export const TOKEN_KEY = "tether.apiKey";
/** What an older page kept per session in this browser (versions, stop causes): the gateway keeps both now; dropped. */
const PAGE_KEY = (sessionId: string) => `tether.page.${sessionId}`;
/** A running turn silent this long while "connected": probe the socket (a stalled stream). */
const STALL_MS = 4000;
/** A probe unanswered this long: say so at once (the SDK drops the socket when it times out). */
const STALL_SHOW_MS = 1000;

export interface ModelOption {
  id: string;
  provider: string;
  /** Where a session on it compresses (GET /v1/models `compress_at_tokens`), when finite. */
  compressAt?: number;
}

const PROMPT_KEY = "tether.systemPrompt";

export interface Toast {
  id: number;
  text: string;
  tone: "info" | "ok" | "warn" | "error";
}

export interface ConfirmRequest {
  model: string;
  message: string;
}

type Listener = () => void;

function errorText(err: unknown): string {
  if (err instanceof RpcError) return `${err.message} (${err.code})`;
  return err instanceof Error ? err.message : String(err);
}

export class AppController {
  token: string | null;
  needsKey = false;
  keyError: string | undefined;
  status: ClientStatus = { state: "connecting", attempt: 0 };
  /** The gateway restarted while this page was open (shown once, then cleared). */
  sessions: SessionSummary[] = [];
  /** The list's search text (titles and contents, server-side) and which list: open or archived. */
  searchQuery = "";
  showArchived = false;
  private listSeq = 0;
  /** The first `session.list` after a connect (an ended session's read-only view waits for its row). */
  private listed: Promise<void> = Promise.resolve();
  models: ModelOption[] = [];
  /** Models that ask for confirmation before a switch (`requires_confirmation` on /v1/models, or a confirm_required seen). */
  guarded = new Set<string>();
  currentId: string | undefined;
  confirm: ConfirmRequest | undefined;
  toasts: Toast[] = [];
  /** What the composer should show next (a first prompt whose session could not be created): `seq` tells a new one. */
  composerDraft = { text: "", seq: 0 };
  /** What the page's live region says: a reply that finished (never each word as it streams). */
  announcement = "";
  /** The model a draft's session is created on (picked in the draft's model menu; absent: the profile's). */
  draftModel: string | undefined;
  /** The folder a draft's session is created in (picked among the workspace roots: folders.tsx); absent: none. */
  draftCwd: string | undefined;
  /** The draft's first prompt while its session is being created (`startSession`). */
  starting: string | undefined;
  /** The system prompt new sessions start with ("" = the profile's). */
  newSessionPrompt = "";
  /** The browser said `offline` (cleared by `online` or a new connection). */
  offline = false;
  /** A running turn went silent and a probe of the socket is unanswered. */
  stalled = false;
  private lastFrameAt = Date.now();
  private probing = false;
  private stallTimer: ReturnType<typeof setInterval> | undefined;
  private client: TetherClient | undefined;
  /** The open session, kept by the SDK. */
  private view: SessionView | undefined;
  /** The open session's transcript model. */
  get current(): SessionModel | undefined {
    return this.view?.model;
  }
  get loading(): boolean {
    return this.view?.getSnapshot().loading ?? false;
  }
  /** Why the open session could not be shown (none for one that ended: it shows read-only). */
  get sessionError(): string | undefined {
    const err = this.view?.getSnapshot().error;
    if (!err) return undefined;
    return err instanceof RpcError && err.code === ErrorCode.NotFound ? "This session does not exist (or belongs to someone else)." : errorText(err);
  }
  /** The tab's SDK client, for panels that make their own calls (processes.tsx pages a process's output). */
  get sdk(): TetherClient | undefined {
    return this.client;
  }
  private listeners = new Set<Listener>();
  private scheduled = false;
  private toastSeq = 0;
  private listTimer: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly storage: Storage, private readonly location: Location) {
    this.token = storage.getItem(TOKEN_KEY);
    this.offline = typeof navigator !== "undefined" && navigator.onLine === false;
    this.newSessionPrompt = storage.getItem(PROMPT_KEY) ?? "";
  }

  setNewSessionPrompt(text: string): void {
    this.newSessionPrompt = text.trim();
    if (this.newSessionPrompt) this.storage.setItem(PROMPT_KEY, this.newSessionPrompt);
    else this.storage.removeItem(PROMPT_KEY);
    this.changed();
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Coalesces bursts of frames into one render per animation frame. */
  private changed(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const run = () => {
      this.scheduled = false;
      for (const l of [...this.listeners]) l();
    };
    if (typeof requestAnimationFrame === "function" && document.visibilityState === "visible") requestAnimationFrame(run);
    else setTimeout(run, 16);
  }

  /** One toast at a time (the newest), shown in the page's flow above the composer, never over it. */
  toast(text: string, tone: Toast["tone"] = "info", ms = 4000): void {
    const id = ++this.toastSeq;
    this.toasts = [{ id, text, tone }];
    this.changed();
    setTimeout(() => {
      this.toasts = this.toasts.filter((t) => t.id !== id);
      this.changed();
    }, ms);
  }

  /** The gateway cannot be reached right now: what streams is paused, Stop cannot act. */
  get linkDown(): boolean {
    return this.offline || this.stalled || this.status.state !== "connected";
  }

  /** The browser's `offline` event: shown at once, and the socket is probed. */
  goOffline(): void {
    this.offline = true;
    this.changed();
    this.wake();
  }

  goOnline(): void {
    this.offline = false;
    this.changed();
    this.wake();
  }

  /** A running turn silent for STALL_MS: probe; if the probe hangs, the page says so at once. */
  private checkStall(): void {
    const m = this.current;
    const client = this.client;
    if (!m?.running || !client || this.probing || this.status.state !== "connected" || m.requests.length > 0) return;
    if (Date.now() - this.lastFrameAt < STALL_MS) return;
    this.probing = true;
    const shown = setTimeout(() => {
      this.stalled = true;
      this.changed();
    }, STALL_SHOW_MS);
    void client.wake().finally(() => {
      clearTimeout(shown);
      this.probing = false;
      this.stalled = false;
      this.lastFrameAt = Date.now();
      this.changed();
    });
  }

  /** An older page's per-session state in this browser: the gateway keeps versions and stop reasons now. */
  private forgetPageState(sessionId: string): void {
    try {
      this.storage.removeItem(PAGE_KEY(sessionId));
    } catch {
      // storage blocked: nothing to forget
    }
  }

  private authHeaders(): Record<string, string> {
    return this.token ? { authorization: `Bearer ${this.token}` } : {};
  }

  /**
   * Opens the socket while the key is checked over HTTP (a browser learns nothing from a refused
   * WebSocket): neither waits on the other (#33). A refused key closes that socket again.
   */
  async start(): Promise<void> {
    const client = this.newClient();
    const connecting = this.connect(client);
    if (await this.checkKey(client)) await connecting;
  }

  /** GET /v1/models: false when the key is refused (the key screen shows, `client` is closed); fills the model list. */
  private async checkKey(client: TetherClient): Promise<boolean> {
    let res: Response;
    for (;;) {
      try {
        res = await fetch("/v1/models", { headers: this.authHeaders() });
        break;
      } catch (err) {
        if (this.client !== client) return false;
        if (this.status.state !== "connected") this.status = { state: "reconnecting", attempt: 1, delayMs: 2000, reason: errorText(err) };
        this.changed();
        await new Promise((r) => setTimeout(r, 2000));
        if (this.client !== client) return false;
      }
    }
    if (this.client !== client) return false;
    if (res.status === 401) {
      this.client = undefined;
      this.view?.dispose();
      this.view = undefined;
      void client.close();
      this.needsKey = true;
      this.keyError = this.token ? "That API key was refused." : undefined;
      this.status = { state: "closed" };
      this.changed();
      return false;
    }
    this.needsKey = false;
    if (res.ok) {
      const body = (await res.json()) as { data?: Array<{ id: string; owned_by: string; requires_confirmation?: boolean; compress_at_tokens?: number }> };
      this.models = (body.data ?? []).map((m) => ({ id: m.id, provider: m.owned_by, ...(m.compress_at_tokens ? { compressAt: m.compress_at_tokens } : {}) }));
      this.guarded = new Set((body.data ?? []).filter((m) => m.requires_confirmation).map((m) => m.id));
    }
    this.changed();
    return true;
  }

  async setToken(token: string): Promise<void> {
    this.token = token.trim() || null;
    if (this.token) this.storage.setItem(TOKEN_KEY, this.token);
    else this.storage.removeItem(TOKEN_KEY);
    await this.start();
  }

  forgetToken(): void {
    this.storage.removeItem(TOKEN_KEY);
    this.token = null;
    void this.client?.close();
    this.client = undefined;
    this.view?.dispose();
    this.view = undefined;
    this.needsKey = true;
    this.changed();
  }

  private newClient(): TetherClient {
    const proto = this.location.protocol === "https:" ? "wss:" : "ws:";
    const client = new TetherClient({
      url: `${proto}//${this.location.host}/ws`,
      ...(this.token ? { token: this.token } : {}),
      backoff: { initialMs: 250, maxMs: 5000 },
      // A page notices a dead link within seconds, not the SDK's default ~20 s.
      pingIntervalMs: 5000,
      pingTimeoutMs: 4000,
      wakeProbeMs: 2500,
      onHandlerError: (err) => console.error("tether web: handler failed", err),
    });
    void this.client?.close(); // a key entered again: the socket with the old one goes
    this.client = client;
    this.view?.dispose();
    this.view = this.sessionView(client);
    return client;
  }

  private async connect(client: TetherClient): Promise<void> {
    installBrowserTools(client);
    client.onStatus((s) => {
      if (this.client !== client) return; // a socket closed for a refused key, or replaced
      this.status = s;
      if (s.state === "connected") {
        this.lastFrameAt = Date.now();
        if (s.reconnected) this.offline = false;
      }
      if (s.state === "connected" && s.reconnected) {
        if (s.restarted) this.toast("Gateway restarted — transcript recovered", "ok");
        void this.refreshSessions();
      }
      this.changed();
    });
    this.stallTimer ??= setInterval(() => this.checkStall(), 1000);
    client.onGlobal((f) => {
      if (f.type === "session.reclaimed") void this.refreshSessions();
    });
    for (;;) {
      try {
        await client.connect();
        break;
      } catch (err) {
        if (this.client !== client) return;
        this.status = { state: "reconnecting", attempt: 1, delayMs: 1000, reason: errorText(err) };
        this.changed();
        await new Promise((r) => setTimeout(r, 1000));
        if (this.client !== client) return;
      }
    }
    // The list fills the sidebar when it comes; the session in the URL is resumed at once (#33).
    const listed = this.refreshSessions();
    this.listed = listed;
    this.listTimer ??= setInterval(() => void this.refreshSessions(), 10_000);
    const wanted = this.sessionFromHash();
    // Without a session in the URL the page opens on a new session's composer (a draft).
    if (wanted) await this.openSession(wanted);
    await listed;
    this.changed();
  }

  /** Called when the tab becomes visible or the network comes back: probe the socket. */
  wake(): void {
    void this.client?.wake();
  }

  sessionFromHash(): string | undefined {
    const m = /^#\/s\/([^/?#]+)/.exec(this.location.hash);
    return m ? decodeURIComponent(m[1]!) : undefined;
  }

  navigate(sessionId: string): void {
    const hash = `#/s/${encodeURIComponent(sessionId)}`;
    if (this.location.hash === hash) void this.openSession(sessionId);
    else this.location.hash = hash;
  }

  async refreshSessions(): Promise<void> {
    const client = this.client;
    if (!client?.connected) return;
    const seq = ++this.listSeq;
    try {
      const q = this.searchQuery.trim();
      const res = await client.call(Method.SessionList, { include_ended: true, limit: 100, archived: this.showArchived, ...(q ? { query: q.slice(0, 200) } : {}) });
      if (seq !== this.listSeq) return; // a newer search answered first
      this.sessions = res.sessions;
      this.changed();
    } catch {
      // the next refresh (or reconnect) tries again
    }
  }

  private requireClient(): TetherClient {
    if (!this.client) throw new Error("not connected");
    return this.client;
  }

  /** The SDK's view of the open session, wired to the page: renders, the list, the address, the stall probe. */
  private sessionView(client: TetherClient): SessionView {
    const view = new SessionView(client, {
      // An ended session's title and model: from the list, once the first one has answered.
      describe: async (id) => {
        await this.listed;
        return this.sessions.find((s) => s.session_id === id);
      },
      onFrame: (frame, applied) => {
        this.lastFrameAt = Date.now();
        if (applied) this.onModelFrame(frame);
      },
      onDropped: () => void this.refreshSessions(),
      onOpened: (snap) => {
        this.forgetPageState(snap.session_id);
        this.currentId = snap.session_id;
        if (snap.resolved_from) this.navigate(snap.session_id);
        void this.refreshSessions();
      },
    });
    view.subscribe(() => this.changed());
    return view;
  }

  private requireView(): SessionView {
    if (!this.view) throw new Error("not connected");
    return this.view;
  }

  /** Opens (or switches to) a session: the SDK subscribes first, then resumes; a user-closed one shows read-only. */
  async openSession(sessionId: string): Promise<void> {
    const client = this.requireClient();
    const view = this.requireView();
    const previous = this.currentId;
    if (previous && previous !== sessionId) void client.call(Method.SessionDetach, { session_id: previous }).catch(() => undefined);
    this.currentId = sessionId;
    this.changed();
    try {
      await view.open(sessionId);
    } catch {
      // the view says how (read-only when ended, else its error)
      void this.refreshSessions();
    }
  }

  private onModelFrame(frame: Frame): void {
    if (isFrameOf(frame, "message.complete")) {
      const c = frame.payload;
      // A count, not the text: the reply is right there in the transcript to read (and no text is shown twice).
      if (c.role === "assistant" && c.status === "complete" && c.content) {
        const words = c.content.trim().split(/\s+/).length;
        this.announcement = `Reply finished (${words} ${words === 1 ? "word" : "words"})`;
      }
    }
    if (frame.type === "turn.complete" || frame.type === "session.info" || frame.type === "session.closed" || frame.type === "model.switched") {
      void this.refreshSessions();
    }
    this.changed();
  }

  /**
   * A new session is a draft until its first prompt (`startSession`): the page shows an empty
   * composer and nothing is created on the gateway, so no empty "Untitled session" rows pile up.
   */
  newSession(): void {
    const client = this.client;
    const previous = this.currentId;
    if (client && previous) void client.call(Method.SessionDetach, { session_id: previous }).catch(() => undefined);
    this.view?.reset();
    this.currentId = undefined;
    if (this.location.hash) this.location.hash = "";
    this.changed();
  }

  /** The draft's first prompt: creates the session, opens it, then sends `text` (the draft shows it meanwhile). */
  async startSession(text: string, parts?: PartInput[]): Promise<boolean> {
    const client = this.client;
    if (!client || this.starting !== undefined || !text.trim()) return false;
    this.starting = text;
    this.changed();
    try {
      const snap = await client.createSession({
        client_tools: BROWSER_TOOLS,
        ...(this.newSessionPrompt ? { system_prompt: this.newSessionPrompt } : {}),
        ...(this.draftModel ? { model: this.draftModel } : {}),
        ...(this.draftCwd ? { cwd: this.draftCwd } : {}),
      });
      // currentId first: the hash change that follows finds the session already open.
      this.currentId = snap.session_id;
      this.location.hash = `#/s/${encodeURIComponent(snap.session_id)}`;
      await this.openSession(snap.session_id);
      return await this.submit(text, parts ? { parts } : {});
    } catch (err) {
      this.toast(`Could not create a session: ${errorText(err)}`, "error");
      this.composerDraft = { text, seq: this.composerDraft.seq + 1 };
      return false;
    } finally {
      this.starting = undefined;
      this.changed();
    }
  }

  /**
   * Runs the exchange of user message `userKey` again, as a new version of it (the gateway's
   * branching: `prompt.submit { from_message_id }`) — with `text`, an edit; without, the same prompt.
   * The old branch stays a previous version; any exchange of the transcript, not only the newest.
   */
  async regenerate(userKey: string, text?: string): Promise<boolean> {
    const user = this.current?.blocks.find((b) => b.key === userKey && b.kind === "user");
    if (!user || user.kind !== "user") return false;
    return this.submit(text ?? user.text, { replaces: userKey, ...(text === undefined ? { sameText: true } : {}) });
  }

  /** "‹ / ›": shows another version of a prompt (`session.branch.select`), a change every viewer sees. */
  async selectVersion(messageId: string): Promise<void> {
    const model = this.current;
    if (!model || !this.client) return;
    try {
      await this.client.selectVersion(model.sessionId, messageId);
    } catch (err) {
      this.toast(`Could not switch versions: ${errorText(err)}`, "error");
    }
  }

  /** The open session's own system prompt (`session.update`): from its next turn on; "" = the profile's. */
  async setSessionPrompt(text: string): Promise<boolean> {
    const model = this.current;
    if (!model || !this.client) return false;
    try {
      await this.client.call(Method.SessionUpdate, { session_id: model.sessionId, system_prompt: text.trim() });
      this.view?.update((m) => {
        if (text.trim()) m.systemPrompt = text.trim();
        else delete m.systemPrompt;
      });
      this.toast(text.trim() ? "System prompt saved: used from the next reply" : "System prompt cleared: the profile's applies", "ok");
      this.changed();
      return true;
    } catch (err) {
      this.toast(`Could not save the system prompt: ${errorText(err)}`, "error");
      return false;
    }
  }

  async submit(text: string, opts: { replaces?: string; sameText?: boolean; parts?: PartInput[] } = {}): Promise<boolean> {
    const model = this.current;
    const client = this.client;
    if (!model || !client || !text.trim()) return false;
    if (model.state === "ended") {
      this.toast("This session has ended: reopen it first", "warn");
      return false;
    }
    // An untitled session is named after its first prompt (renamable from the sidebar).
    if (!model.title && !model.blocks.some((b) => b.kind === "user") && model.pending.length === 0) {
      const title = text.replace(/\s+/g, " ").trim().slice(0, 60);
      this.view?.update((m) => (m.title = title));
      void client.call(Method.SessionUpdate, { session_id: model.sessionId, title }).then(() => this.refreshSessions(), () => undefined);
    }
    // Shown at once as pending; the same request_id on every retry: a prompt sent twice never runs twice.
    return this.requireView().submit(text, opts);
  }

  /**
   * Cancels a queued prompt (`prompt.cancel`): it never runs. Returns its text; `beforeRemoved`
   * gets it before the row leaves the transcript (Edit: the composer has the text in that same render).
   */
  async cancelPending(requestId: string, beforeRemoved?: (text: string) => void): Promise<string | undefined> {
    const model = this.current;
    const q = model?.pending.find((x) => x.requestId === requestId);
    if (!model || !q || !this.client) return undefined;
    if (q.turnId) {
      try {
        const res = await this.client.call(Method.PromptCancel, { session_id: model.sessionId, turn_id: q.turnId });
        if (res.status === "interrupted") this.toast("It had started: stopped", "info");
      } catch (err) {
        this.toast(`Cancel failed: ${errorText(err)}`, "error");
        return undefined;
      }
    }
    beforeRemoved?.(q.text);
    this.dismissPending(requestId);
    return q.text;
  }

  /** `workspace.folders`: the folder picker's listing — the profile's roots, or a folder's sub-folders. */
  listFolders(path?: string): Promise<WorkspaceFoldersResult> {
    if (!this.client) return Promise.reject(new Error("not connected"));
    return this.client.call(Method.WorkspaceFolders, path ? { path } : {});
  }

  /** The draft's folder (one `listFolders` offered; the gateway checks it again at create). */
  chooseFolder(path: string | undefined): void {
    this.draftCwd = path;
    this.changed();
  }

  /**
   * Edits a queued prompt in its place (`prompt.edit`): it keeps its turn in the queue. Too late
   * (it started) or gone, the toast says so and nothing changes.
   */
  async editQueued(requestId: string, text: string): Promise<void> {
    try {
      const status = await this.requireView().editQueued(requestId, text);
      if (status === "started") this.toast("It had started: the edit was not applied", "info");
      else if (status === "idle") this.toast("That prompt no longer waits: the edit was not applied", "info");
    } catch (err) {
      this.toast(`Edit failed: ${errorText(err)}`, "error");
    }
  }

  /** Continue: the stopped reply goes on in the same exchange, with no prompt of the user's (`prompt.submit { continue: true }`). */
  continueReply(): Promise<boolean> {
    const model = this.current;
    if (!model || !this.client || model.state === "ended") return Promise.resolve(false);
    return this.requireView().continueReply();
  }

  dismissPending(requestId: string): void {
    this.view?.dismissPending(requestId);
  }

  /** Answers an open request of the current session (an approval's choice, or input content). */
  async respond(requestId: string, answer: { choice?: string; content?: Record<string, unknown>; error?: string; note?: string }): Promise<boolean> {
    const model = this.current;
    if (!model || !this.client) return false;
    try {
      await this.client.call(Method.RequestRespond, { session_id: model.sessionId, request_id: requestId, ...answer });
      return true;
    } catch (err) {
      // Answered elsewhere first (4012): the card goes with its request.resolved; say so.
      if (err instanceof RpcError && err.code === ErrorCode.RequestResolved) {
        this.toast("Already answered (in another tab or client)", "info");
        return true;
      }
      this.toast(`Could not answer: ${errorText(err)}`, "error");
      return false;
    }
  }

  async interrupt(): Promise<void> {
    const model = this.current;
    if (!model || !this.client || this.linkDown) return;
    // "You stopped this" comes back from the gateway with the reply (`stop_reason: "user"`).
    try {
      await this.client.call(Method.SessionInterrupt, { session_id: model.sessionId });
    } catch (err) {
      this.toast(`Interrupt failed: ${errorText(err)}`, "error");
    }
  }

  async rename(sessionId: string, title: string): Promise<void> {
    try {
      await this.requireClient().call(Method.SessionUpdate, { session_id: sessionId, title });
      if (this.current?.sessionId === sessionId) this.view?.update((m) => (m.title = title));
      await this.refreshSessions();
    } catch (err) {
      this.toast(`Rename failed: ${errorText(err)}`, "error");
    }
  }

  search(text: string): void {
    this.searchQuery = text;
    this.changed();
    void this.refreshSessions();
  }

  toggleArchived(): void {
    this.showArchived = !this.showArchived;
    this.changed();
    void this.refreshSessions();
  }

  async archive(sessionId: string, archived: boolean): Promise<void> {
    try {
      await this.requireClient().call(Method.SessionUpdate, { session_id: sessionId, archived });
      await this.refreshSessions();
      this.toast(archived ? "Session archived" : "Session back in the list", "info");
    } catch (err) {
      this.toast(`Archive failed: ${errorText(err)}`, "error");
    }
  }

  /**
   * Downloads the transcript (`GET /api/sessions/{id}/export?format=markdown`, the active branch with
   * its compression lineage) as a file: fetched with the key's header, saved through a blob link.
   */
  async download(sessionId: string, title: string): Promise<void> {
    try {
      const res = await fetch(`/api/sessions/${encodeURIComponent(sessionId)}/export?format=markdown`, { headers: this.authHeaders() });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const url = URL.createObjectURL(await res.blob());
      const a = document.createElement("a");
      a.href = url;
      a.download = `${(title || sessionId).replace(/[^\w.-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 60) || sessionId}.md`;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (err) {
      this.toast(`Download failed: ${errorText(err)}`, "error");
    }
  }

  /** Deletes the session and its transcript for good (the row asked first). */
  async deleteSession(sessionId: string): Promise<void> {
    try {
      await this.requireClient().call(Method.SessionDelete, { session_id: sessionId });
      this.forgetPageState(sessionId);
      if (this.currentId === sessionId) {
        this.view?.reset();
        this.currentId = undefined;
        this.location.hash = "";
      }
      await this.refreshSessions();
      this.toast("Session deleted", "info");
    } catch (err) {
      this.toast(`Delete failed: ${errorText(err)}`, "error");
    }
  }

  async close(sessionId: string): Promise<void> {
    try {
      await this.requireClient().call(Method.SessionClose, { session_id: sessionId });
      await this.refreshSessions();
    } catch (err) {
      this.toast(`Close failed: ${errorText(err)}`, "error");
    }
  }

  /** Recoverable ends come back with a resume; user closes need `session.reopen`. */
  async reopen(sessionId: string): Promise<void> {
    const client = this.requireClient();
    const summary = this.sessions.find((s) => s.session_id === sessionId);
    const reason = summary?.end_reason ?? this.current?.endReason;
    try {
      if (!isRecoverableEnd(reason)) await client.call(Method.SessionReopen, { session_id: sessionId });
      if (this.currentId === sessionId) this.view?.reset();
      this.navigate(sessionId);
      if (this.currentId === sessionId) await this.openSession(sessionId);
      this.toast("Session reopened", "ok");
    } catch (err) {
      this.toast(`Reopen failed: ${errorText(err)}`, "error");
    }
  }

  /** `config.set {key: "model"}`; a guarded model first asks (the confirm_required round trip). */
  async switchModel(modelId: string, confirm = false): Promise<void> {
    const model = this.current;
    if (!model && !this.currentId) return this.pickDraftModel(modelId, confirm);
    if (!model || !this.client) return;
    this.confirm = undefined;
    try {
      const res = await this.client.call(Method.ConfigSet, { session_id: model.sessionId, key: "model", value: modelId, ...(confirm ? { confirm: true } : {}) });
      if (res.status === "confirm_required") {
        this.guarded.add(modelId);
        this.confirm = { model: modelId, message: res.confirm_message ?? `Switching to ${modelId} needs confirmation.` };
      } else if (res.status === "pending" && modelId === model.model) {
        // Back to the model in use: the stashed switch is now a no-op (no model.switched comes).
        this.view?.update((m) => delete m.pendingModel);
      } else if (res.status === "pending") {
        this.view?.update((m) => (m.pendingModel = modelId));
        this.toast(`${modelId} will be used from the next turn`, "info");
      } else {
        this.view?.update((m) => {
          delete m.pendingModel;
          m.model = modelId;
        });
      }
    } catch (err) {
      this.toast(`Model switch failed: ${errorText(err)}`, "error");
    }
    this.changed();
  }

  /** A draft's model: the session is created on it (a guarded one asks here first, as a switch would). */
  private pickDraftModel(modelId: string, confirm: boolean): void {
    this.confirm = undefined;
    if (this.guarded.has(modelId) && !confirm) this.confirm = { model: modelId, message: `${modelId} needs confirmation. Use it for this session?` };
    else this.draftModel = modelId;
    this.changed();
  }

  cancelConfirm(): void {
    this.confirm = undefined;
    this.changed();
  }

  async refreshTodo(): Promise<void> {
    try {
      await this.view?.refreshTodo();
    } catch {
      // shown from frames anyway
    }
  }

  /** The open session's background processes, as the SDK's view keeps them (process.list at open, then frames). */
  get processes(): readonly ProcessInfo[] {
    return this.view?.getSnapshot().processes ?? [];
  }

  /** Stop on a process row: the view shows it ended once the gateway answers. */
  async killProcess(id: string): Promise<void> {
    try {
      await this.requireView().killProcess(id);
    } catch (err) {
      this.toast(`Could not stop the process: ${errorText(err)}`, "error");
    }
  }
}
